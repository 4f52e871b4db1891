import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

/** Turns a recorded voice file into text. */
export interface Transcriber {
  readonly name: string;
  /** The transcript, or '' when nothing was recognized. Throws UnreadableAudioError for files that are not audio. */
  transcribe(file: string): Promise<string>;
}

export class UnreadableAudioError extends Error {}

function run(command: string, args: string[], timeoutMs: number): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (text: string) => (stdout += text));
    child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr = (stderr + text).slice(-2000)));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', reject);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/**
 * On-server recognition with Debian's pocketsphinx and its US English model: ffmpeg turns any voice
 * format into 16 kHz mono WAV, pocketsphinx_continuous reads it.
 */
export class PocketsphinxTranscriber implements Transcriber {
  readonly name = 'pocketsphinx';

  constructor(private readonly modelDir = '/usr/share/pocketsphinx/model/en-us') {}

  async transcribe(file: string): Promise<string> {
    const work = await mkdtemp(path.join(os.tmpdir(), 'chat-stt-'));
    try {
      const wav = path.join(work, 'voice.wav');
      const converted = await run('ffmpeg', ['-nostdin', '-y', '-loglevel', 'error', '-i', file, '-vn', '-ar', '16000', '-ac', '1', '-f', 'wav', wav], 120_000);
      if (converted.code !== 0) throw new UnreadableAudioError(`not a readable audio file: ${converted.stderr.trim().split('\n').at(-1) ?? ''}`);
      const recognized = await run(
        'pocketsphinx_continuous',
        ['-infile', wav, '-hmm', path.join(this.modelDir, 'en-us'), '-lm', path.join(this.modelDir, 'en-us.lm.bin'), '-dict', path.join(this.modelDir, 'cmudict-en-us.dict'), '-logfn', '/dev/null'],
        300_000,
      );
      if (recognized.code !== 0) throw new Error(`pocketsphinx exited with ${recognized.code}`);
      return recognized.stdout
        .split('\n')
        .map((line) => line.trim())
        .filter(Boolean)
        .join(' ');
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  }
}
