import { stat } from 'node:fs/promises';
import type { CodedError } from '../platform/errors.js';
import type { Principal } from '../platform/principal.js';
import { SpeechErrors } from './speech.errors.js';
import { UnreadableAudioError, type Transcriber } from './transcriber.js';

/** The spec's answer carries the code in `error` too. */
const failure = (error: CodedError, message?: string) => error({ ...(message ? { message } : {}), extra: { error: error.code } });

/** Spec, "Messages", rule 3: a recorded voice file converted and transcribed on the server. */
export class SpeechService {
  constructor(private readonly transcriber: () => Transcriber) {}

  /** The transcript of a staged upload (the caller removes the file); 400 with `error` when there is none. */
  async transcribe(_principal: Principal, file: { path: string } | null): Promise<{ text: string }> {
    if (!file) throw failure(SpeechErrors.EMPTY_FILE, 'No file was sent');
    if ((await stat(file.path)).size === 0) throw failure(SpeechErrors.EMPTY_FILE, 'The file is empty');
    let text: string;
    try {
      text = await this.transcriber().transcribe(file.path);
    } catch (error) {
      if (error instanceof UnreadableAudioError) throw failure(SpeechErrors.UNREADABLE_AUDIO);
      throw error;
    }
    if (text.length === 0) throw failure(SpeechErrors.NO_TRANSCRIPT);
    return { text };
  }
}
