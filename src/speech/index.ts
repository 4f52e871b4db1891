import type { Platform } from '../platform/platform.js';
import { SpeechService } from './speech.service.js';
import { PocketsphinxTranscriber, type Transcriber } from './transcriber.js';

/** Speech to text, with the recognizer built on first use. */
export function speechArea(_p: Platform) {
  let transcriber: Transcriber | null = null;
  return { speech: new SpeechService(() => (transcriber ??= new PocketsphinxTranscriber())) };
}
