import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { bearer, signIn, startTestApp, type Session, type TestApp } from '../helpers/app.js';
import { multipart } from '../helpers/multipart.js';

const exec = promisify(execFile);
// A real recording shipped by Debian's pocketsphinx-testdata: 16 kHz mono PCM of "go forward ten meters".
const RECORDING = '/usr/share/pocketsphinx/test/data/goforward.raw';

async function ffmpeg(args: string[], extension: string): Promise<Buffer> {
  const out = path.join(os.tmpdir(), `stt-${Date.now()}-${Math.random().toString(36).slice(2)}.${extension}`);
  await exec('ffmpeg', ['-nostdin', '-y', '-loglevel', 'error', ...args, out]);
  return readFile(out);
}

describe('speech-to-text', () => {
  let t: TestApp;
  let s: Session;
  before(async () => {
    t = await startTestApp();
    s = await signIn(t);
  });
  after(() => t.close());

  const send = (content: Buffer, filename = 'voice.m4a') => {
    const body = multipart([{ filename, content, contentType: 'audio/mp4' }]);
    return t.app.inject({ method: 'POST', url: '/api/speech-to-text', headers: { ...bearer(s.accessToken), ...body.headers }, payload: body.payload });
  };

  it('transcribes a known recording sent as an AAC voice message', async () => {
    const voice = await ffmpeg(['-f', 's16le', '-ar', '16000', '-ac', '1', '-i', RECORDING, '-c:a', 'aac'], 'm4a');
    const res = await send(voice);
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json(), { text: 'go forward ten meters' });
  });

  it('400 with error: an empty file, silence, and bytes that are not audio', async () => {
    const empty = await send(Buffer.alloc(0));
    assert.equal(empty.statusCode, 400);
    assert.equal(empty.json().error, 'EMPTY_FILE');
    const silence = await send(await ffmpeg(['-f', 'lavfi', '-i', 'anullsrc=r=16000:cl=mono', '-t', '2', '-c:a', 'aac'], 'm4a'));
    assert.equal(silence.statusCode, 400);
    assert.equal(silence.json().error, 'NO_TRANSCRIPT');
    const garbage = await send(Buffer.from('definitely not audio, just text pretending to be a voice note'));
    assert.equal(garbage.statusCode, 400);
    assert.equal(garbage.json().error, 'UNREADABLE_AUDIO');
    assert.equal(garbage.json().code, 'UNREADABLE_AUDIO');
  });

  it('refuses a second file rather than ignoring it', async () => {
    const body = multipart([{ filename: 'a.m4a', content: Buffer.from('first') }, { filename: 'b.m4a', content: Buffer.from('second') }]);
    const res = await t.app.inject({ method: 'POST', url: '/api/speech-to-text', headers: { ...bearer(s.accessToken), ...body.headers }, payload: body.payload });
    assert.equal(res.statusCode, 400, res.body);
    assert.equal(res.json().code, 'LIMIT_FILES_PER_UPLOAD');
  });

  it('needs a token and a multipart body', async () => {
    assert.equal((await t.app.inject({ method: 'POST', url: '/api/speech-to-text' })).statusCode, 401);
    const json = await t.app.inject({ method: 'POST', url: '/api/speech-to-text', headers: bearer(s.accessToken), payload: { file: 'x' } });
    assert.equal(json.statusCode, 415);
  });
});
