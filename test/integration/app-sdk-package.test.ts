import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

import { signIn, startTestApp, type TestApp } from '../helpers/app.js';
import { httpAs, makeRoom } from '../helpers/factories.js';
import { installPacked } from '../helpers/packages.js';
import { freePort } from '../helpers/ports.js';

const exec = promisify(execFile);
// This file runs from dist/test/integration; the SDK's sources are in the project's tree.
const project = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const sdk = path.join(project, 'packages', 'app-sdk');

/** What an app's server does with the SDK, installed from its tarball outside this repository (issue 24, item 8). */
const CONSUMER = `
import http from 'node:http';
import { createHmac } from 'node:crypto';
import { webhookHandler } from '@chat-platform/app-sdk';

const secret = 'whsec_package-test';
const calls = { menu: 0, order: 0, paid: 0, rooms: [] };
const errors = [];
const server = http.createServer(webhookHandler({
  secrets: () => secret,
  // As uploaded: the command 'order' opens the form 'order-form'.
  manifest: { commands: [{ id: 'menu', title: 'Menu' }, { id: 'order', title: 'Order', flow: 'order-form' }] },
  commands: { menu: () => (calls.menu++, { type: 'card', card: { blocks: [{ type: 'title', text: 'Menu' }] } }) },
  flows: { 'order-form': (body) => (calls.order++, { type: 'ack', message: 'Ordered ' + body.values.count }) },
  actions: { broken: () => { throw new Error('the kitchen is on fire'); } },
  onPaymentEvent: () => (calls.paid++, null),
  onRoomEvent: (event) => void calls.rooms.push(event.type + ' ' + event.room.id),
  onError: (error, body) => errors.push([error.message, body.id]),
}));
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const url = 'http://127.0.0.1:' + server.address().port + '/';
const send = (payload, delivery, signature) => {
  const body = JSON.stringify(payload);
  const ts = Math.floor(Date.now() / 1000);
  const headers = { 'content-type': 'application/json', 'x-service-timestamp': String(ts), 'x-service-delivery': delivery, 'x-service-signature': signature ?? 'v1=' + createHmac('sha256', secret).update(ts + '.' + body).digest('hex') };
  return fetch(url, { method: 'POST', headers, body });
};
const invocation = (fields) => ({ type: 'invocation', id: 'inv-1', ts: 1, command: null, flow: null, step: null, values: null, sealed: null, payload: null, action: null, user: { id: 'u1' }, conversation: null, ...fields });
const first = await send(invocation({ command: 'menu', values: {} }), 'd-1');
const replay = await send(invocation({ command: 'menu', values: {} }), 'd-1');
// A captured call sent again with a new delivery header (and so a new signature time): still the same call.
const replayNewHeader = await send(invocation({ command: 'menu', values: {} }), 'd-forged');
const forged = await send(invocation({ command: 'menu', values: {} }), 'd-2', 'v1=00');
// A step of the form the command opened: command set, flow null (the wire), routed to the form's handler.
const step = await send(invocation({ id: 'inv-2', command: 'order', values: { count: 2 } }), 'd-3');
const thrown = await send(invocation({ id: 'inv-3', action: { id: 'broken', payload: {} } }), 'd-4');
const event = { type: 'payment.completed', id: 'evt_p1', ts: 2, app: { id: 'a1' }, payment: { id: 'p1' }, user: { id: 'u1' } };
const paid = await send(event, 'd-5');
const paidAgain = await send(event, 'd-6');
const added = { type: 'app.added', id: 'evt_r1', ts: 3, app: { id: 'a1' }, room: { id: 'room-1', type: 'PUBLIC_GROUP' } };
const roomEvents = [(await send(added, 'd-7')).status, (await send(added, 'd-8')).status];
console.log(JSON.stringify({
  first: [first.status, await first.json()], replay: replay.status, replayNewHeader: replayNewHeader.status, forged: forged.status,
  step: [step.status, await step.json()], thrown: [thrown.status, await thrown.json()], paid: [paid.status, paidAgain.status], roomEvents, calls, errors,
}));
server.close();
`;

/** Every file under `dir` with its size and modification time. */
async function treeOf(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  const files = entries.filter((entry) => entry.isFile()).map((entry) => path.join(entry.parentPath, entry.name));
  return (await Promise.all(files.map(async (file) => `${path.relative(dir, file)} ${(await stat(file)).size} ${(await stat(file)).mtimeMs}`))).sort();
}

describe('the app SDK as a package', () => {
  let work: string;
  /** A project of its own with the SDK installed from its packed tarball, as an app developer has it. */
  let app: string;
  let t: TestApp | undefined;
  before(async () => {
    work = await mkdtemp(path.join(os.tmpdir(), 'app-sdk-package-'));
    // `npm run sdk:pack` builds and packs a copy of the package (prepack: tsc into that copy's dist/):
    // nothing in this tree is written. The SDK has no dependencies: it installs without the registry.
    const before = await treeOf(sdk);
    app = path.join(work, 'app');
    await installPacked('app-sdk', app, { projectName: 'pizza', offline: true });
    assert.deepEqual(await treeOf(sdk), before, 'packing wrote nothing into packages/app-sdk');
  });
  after(async () => {
    await t?.close();
    await rm(work, { recursive: true, force: true });
  });

  it('packs with its build and types, installs into a project of its own, and verifies a real delivery there', async () => {
    const installed = path.join(app, 'node_modules', '@chat-platform', 'app-sdk');
    const manifest = JSON.parse(await readFile(path.join(installed, 'package.json'), 'utf8')) as { exports: Record<string, { types: string; import: string }> };
    for (const file of [manifest.exports['.']!.types, manifest.exports['.']!.import, 'README.md']) assert.ok(existsSync(path.join(installed, file)), `${file} is in the package`);
    assert.ok(!existsSync(path.join(installed, 'src')), 'the TypeScript sources stay out');

    await writeFile(path.join(app, 'consumer.mjs'), CONSUMER);
    const { stdout } = await exec(process.execPath, ['consumer.mjs'], { cwd: app });
    assert.deepEqual(JSON.parse(stdout), {
      first: [200, { type: 'card', card: { blocks: [{ type: 'title', text: 'Menu' }] } }],
      replay: 204,
      replayNewHeader: 204,
      forged: 401,
      step: [200, { type: 'ack', message: 'Ordered 2' }],
      thrown: [200, { type: 'error', userMessage: 'Something went wrong; try again', code: 'HANDLER_FAILED' }],
      paid: [204, 204],
      roomEvents: [204, 204],
      // Each handled once, however often it came.
      calls: { menu: 1, order: 1, paid: 1, rooms: ['app.added room-1'] },
      errors: [['the kitchen is on fire', 'inv-3']],
    });
  });

  it('runs docs/apps/getting-started.md as written: its manifest and app, from the tarball, answer a command with a card and its button', async () => {
    // The page's two files, exactly as a developer copies them.
    const page = await readFile(path.join(project, 'docs', 'apps', 'getting-started.md'), 'utf8');
    const block = (name: string) => {
      const found = new RegExp(`<!-- getting-started: ${name.replace('.', '\\.')} -->\\n\`\`\`\\w+\\n([\\s\\S]*?)\\n\`\`\`\\n`).exec(page);
      assert.ok(found, `the page has ${name}`);
      return found[1]!;
    };
    await writeFile(path.join(app, 'manifest.json'), block('manifest.json'));
    await writeFile(path.join(app, 'app.mjs'), block('app.mjs'));

    t = await startTestApp({ WEBHOOK_ALLOW_PRIVATE: 'true' });
    const api = httpAs(() => t!);
    const owner = await signIn(t);
    const port = await freePort();
    // Step 2: the app; step 3: its server, on the port the app was given.
    const created = await api(owner, 'POST', '/api/apps', { name: 'Weather', webhookUrl: `http://127.0.0.1:${port}/` });
    assert.equal(created.statusCode, 200, created.body);
    const server = spawn(process.execPath, ['app.mjs'], { cwd: app, env: { ...process.env, WEBHOOK_SECRET: created.json().webhookSecret, PORT: String(port) }, stdio: ['ignore', 'pipe', 'inherit'] });
    try {
      await new Promise<void>((resolve, reject) => {
        server.stdout.on('data', (chunk: Buffer) => chunk.toString().includes('listening') && resolve());
        server.once('exit', (code) => reject(new Error(`app.mjs exited ${code}`)));
      });
      // Step 4: the manifest, a room, the app in it.
      const appId = created.json().id as string;
      const uploaded = await api(owner, 'PUT', `/api/apps/${appId}/manifest`, JSON.parse(block('manifest.json')));
      assert.equal(uploaded.statusCode, 200, uploaded.body);
      const room = await makeRoom(t, owner, { name: 'Trip' });
      assert.equal((await api(owner, 'POST', `/api/rooms/${room.id}/apps/${appId}`)).statusCode, 204);
      // Step 5: the command, then its card's button.
      const answered = await api(owner, 'POST', `/api/apps/${appId}/invocations`, { roomId: room.id, command: 'weather', values: { city: 'Berlin' } });
      assert.equal(answered.statusCode, 200, answered.body);
      const { outcome, visibility, messageId, card } = answered.json();
      assert.deepEqual([outcome, visibility, card.blocks[0]], ['card', 'room', { type: 'title', text: 'Weather in Berlin' }]);
      const [newest] = (await api(owner, 'GET', `/api/messages/${room.id}`)).json().items as { id: string; appId: string }[];
      assert.deepEqual([newest!.id, newest!.appId], [messageId, appId], 'the card is a message of the room');
      const tapped = await api(owner, 'POST', `/api/apps/${appId}/invocations`, { roomId: room.id, action: { messageId, id: 'refresh' } });
      assert.deepEqual([tapped.json().outcome, tapped.json().message], ['ack', 'Berlin: 18 °C, light rain'], tapped.body);
    } finally {
      server.kill();
    }
  });
});
