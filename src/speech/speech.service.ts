import { stat } from 'node:fs/promises';
import { badRequest, withBody } from '../platform/errors.js';
import type { Principal } from '../platform/principal.js';
import { UnreadableAudioError, type Transcriber } from './transcriber.js';

const failure = (code: 'EMPTY_FILE' | 'NO_TRANSCRIPT' | 'UNREADABLE_AUDIO', message: string) => withBody(badRequest(code, message), { error: code });

/** Spec, "Messages", rule 3: a recorded voice file converted and transcribed on the server. */
export class SpeechService {
  constructor(private readonly transcriber: () => Transcriber) {}

  /** The transcript of a staged upload (the caller removes the file); 400 with `error` when there is none. */
  async transcribe(_principal: Principal, file: { path: string } | null): Promise<{ text: string }> {
    if (!file) throw failure('EMPTY_FILE', 'No file was sent');
    if ((await stat(file.path)).size === 0) throw failure('EMPTY_FILE', 'The file is empty');
    let text: string;
    try {
      text = await this.transcriber().transcribe(file.path);
    } catch (error) {
      if (error instanceof UnreadableAudioError) throw failure('UNREADABLE_AUDIO', 'The file is not readable audio');
      throw error;
    }
    if (text.length === 0) throw failure('NO_TRANSCRIPT', 'No speech was recognized');
    return { text };
  }
}
