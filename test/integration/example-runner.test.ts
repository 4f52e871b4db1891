import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { freshPhone, signIn, startTestApp, type TestApp } from '../helpers/app.js';
import { httpAs } from '../helpers/factories.js';

const runner = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'examples', 'run-pizza.js');

/** `npm run example:pizza` against a running service, as a person runs it after `npm start` (issue 24, item 8). */
describe('the example app in one command', () => {
  let t: TestApp;
  let baseUrl: string;
  let child: ChildProcess | undefined;
  const api = httpAs(() => t);

  before(async () => {
    t = await startTestApp({ WEBHOOK_ALLOW_PRIVATE: 'true' });
    await t.app.listen({ host: '127.0.0.1', port: 0 });
    const address = t.app.server.address();
    baseUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  });
  after(async () => {
    child?.kill('SIGTERM');
    await t?.close();
  });

  it('signs the shop in, makes and lists the app, opens a group with it, and serves a member there', async () => {
    child = spawn(process.execPath, [runner], { env: { ...process.env, SERVICE_URL: baseUrl, SMS_OUTBOX_FILE: t.outbox, PHONE: freshPhone() }, stdio: ['ignore', 'pipe', 'inherit'] });
    const ready = await new Promise<{ appId: string; roomId: string }>((resolve, reject) => {
      let out = '';
      const timer = setTimeout(() => reject(new Error(`not ready: ${out}`)), 30_000);
      child!.stdout!.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        const line = out.split('\n').find((l) => l.startsWith('{"ready":true'));
        if (line) {
          clearTimeout(timer);
          resolve(JSON.parse(line) as { appId: string; roomId: string });
        }
      });
      child!.once('exit', (code) => reject(new Error(`exited ${code}: ${out}`)));
    });
    const member = await signIn(t);
    assert.equal((await api(member, 'POST', `/api/rooms/${ready.roomId}/join`)).statusCode, 200);
    const menu = await api(member, 'POST', `/api/apps/${ready.appId}/invocations`, { roomId: ready.roomId, command: 'menu' });
    assert.equal(menu.statusCode, 200, menu.body);
    assert.equal(menu.json().outcome, 'card', menu.body);
    assert.equal(menu.json().card.blocks[0].text, 'Menu');
  });
});
