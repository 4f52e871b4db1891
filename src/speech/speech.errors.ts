import { defineErrors } from '../platform/errors.js';

/** Spec, "Messages", rule 3: these also carry `error` with the same code in the body. */
export const SpeechErrors = defineErrors('speech', {
  EMPTY_FILE: { status: 400, message: 'No file was sent, or it is empty' },
  NO_TRANSCRIPT: { status: 400, message: 'No speech was recognized' },
  UNREADABLE_AUDIO: { status: 400, message: 'The file is not readable audio' },
});
