import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import openapiTS, { astToString } from 'openapi-typescript';
import ts from 'typescript';
import { lastCode, startTestApp, type TestApp } from '../helpers/app.js';

const exec = promisify(execFile);
const RECORDING = '/usr/share/pocketsphinx/test/data/goforward.raw';
// Under dist/, so the program it compiles finds openapi-fetch in the project's node_modules.
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * What a client author does: generate types from the served document with an independent generator
 * (openapi-typescript), write a client against them with openapi-fetch, type-check it strictly, and
 * run it. A document that leaves out a request body, a parameter or a record fails the type-check.
 */
const CLIENT = `
import createClient from 'openapi-fetch';
import type { paths } from './api.js';

export async function run(baseUrl: string, phone: string, readCode: (phone: string) => Promise<string>, files: { voice: Blob; note: Blob }) {
  const client = createClient<paths>({ baseUrl });
  const sent = await client.POST('/api/auth/code', { body: { phone } });
  if (sent.response.status !== 204) throw new Error('code: ' + sent.response.status);
  const login = await client.POST('/api/auth/login', { body: { phone, code: await readCode(phone), device: { name: 'Generated client', platform: 'IOS' } } });
  if (!login.data || !('accessToken' in login.data)) throw new Error('login: ' + login.response.status);
  const headers = { Authorization: 'Bearer ' + login.data.accessToken };
  const room = await client.POST('/api/rooms', { headers, body: { type: 'PRIVATE_GROUP', name: 'Generated room' } });
  if (!room.data) throw new Error('room: ' + room.response.status);
  const roomId = room.data.id;
  const posted = await client.PUT('/api/messages/{roomId}', { headers, params: { path: { roomId } }, body: { roomId, message: 'Typed from the document' } });
  if (posted.data === undefined) throw new Error('post: ' + posted.response.status);
  const read = await client.GET('/api/messages/{roomId}', { headers, params: { path: { roomId }, query: { limit: 10 } } });
  const form = new FormData();
  form.append('file', files.note, 'note.txt');
  form.append('payload', JSON.stringify({ roomId, message: 'With a file' }));
  const upload = await client.POST('/api/messages/{roomId}/attachments', { headers, params: { path: { roomId } }, body: { file: [] }, bodySerializer: () => form });
  const voiceForm = new FormData();
  voiceForm.append('file', files.voice, 'voice.m4a');
  const speech = await client.POST('/api/speech-to-text', { headers, body: { file: '' }, bodySerializer: () => voiceForm });
  const muted = await client.POST('/api/rooms/{roomId}/muted', { headers, params: { path: { roomId }, query: { muted: true } } });
  return {
    userId: login.data.userId,
    roomId,
    messageId: posted.data,
    read: read.data?.items.map((m) => m.message) ?? [],
    uploadStatus: upload.response.status,
    transcript: speech.data?.text ?? null,
    muted: muted.data?.muted ?? null,
  };
}
`;

describe('a client generated from the served document', () => {
  let t: TestApp;
  let baseUrl: string;
  const work = path.join(root, `generated-client-${process.pid}`);
  before(async () => {
    t = await startTestApp();
    await t.app.listen({ host: '127.0.0.1', port: 0 });
    const address = t.app.server.address();
    baseUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
    await mkdir(work, { recursive: true });
  });
  after(async () => {
    await rm(work, { recursive: true, force: true });
    await t.close();
  });

  it('type-checks against the document and signs in, makes a room, posts, uploads and transcribes through it', async () => {
    const doc = (await (await fetch(`${baseUrl}/v3/api-docs/api-traffic`)).text()) as string;
    await writeFile(path.join(work, 'api.d.ts'), astToString(await openapiTS(doc)));
    await writeFile(path.join(work, 'client.ts'), CLIENT);
    const program = ts.createProgram([path.join(work, 'client.ts')], {
      strict: true,
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      lib: ['lib.es2023.d.ts', 'lib.dom.d.ts'],
      types: [],
      skipLibCheck: true,
      outDir: work,
    });
    const diagnostics = ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
    assert.deepEqual(diagnostics, [], 'the client type-checks against the generated types');
    assert.equal(program.emit().emitSkipped, false);
    await writeFile(path.join(work, 'package.json'), JSON.stringify({ type: 'module' }));

    const voiceFile = path.join(os.tmpdir(), `gen-voice-${process.pid}.m4a`);
    await exec('ffmpeg', ['-nostdin', '-y', '-loglevel', 'error', '-f', 's16le', '-ar', '16000', '-ac', '1', '-i', RECORDING, '-c:a', 'aac', voiceFile]);
    const voice = await readFile(voiceFile);
    await rm(voiceFile, { force: true });

    const client = (await import(pathToFileURL(path.join(work, 'client.js')).href)) as {
      run: (baseUrl: string, phone: string, readCode: (phone: string) => Promise<string>, files: { voice: Blob; note: Blob }) => Promise<Record<string, unknown>>;
    };
    const phone = `+49151${Math.floor(10_000_000 + Math.random() * 89_999_999)}`;
    const result = await client.run(baseUrl, phone, (p) => lastCode(t.outbox, p), { voice: new Blob([voice], { type: 'audio/mp4' }), note: new Blob(['a note'], { type: 'text/plain' }) });
    assert.equal(typeof result.userId, 'string');
    assert.deepEqual(result.read, ['Typed from the document']);
    assert.equal(result.uploadStatus, 204);
    assert.equal(result.transcript, 'go forward ten meters');
    assert.equal(result.muted, true);
    assert.equal(await t.db.collection('attachments').countDocuments({ roomId: result.roomId }), 1);
  });
});
