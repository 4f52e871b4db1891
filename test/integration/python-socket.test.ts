import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { freshPhone, startTestApp, type TestApp } from '../helpers/app.js';
import { makeUser } from '../helpers/factories.js';
import { spawnHub, type HubProcess } from '../helpers/hubs.js';

const exec = promisify(execFile);
// This file runs from dist/test/integration; the Python script stays in the source tree.
const project = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const FLOW = path.join(project, 'test', 'python', 'socket_flow.py');

/**
 * The hub as a Python phone client sees it (issue 41): python-socketio, pinned, from PyPI (scripts/test.mjs
 * makes its virtual environment), connects over WebSocket to a hub node of its own process, gets a
 * message posted over REST, relays typing, has hub.ping acknowledged, and after reconnecting with
 * `lastSeq` as a decimal string gets exactly the device event it missed.
 */
describe('python-socketio against the hub', () => {
  let t: TestApp;
  let hub: HubProcess;
  let baseUrl: string;
  const venv = process.env.PYTHON_SOCKET_VENV;

  before(async () => {
    assert.ok(venv, 'PYTHON_SOCKET_VENV is not set: run the tests through npm test, which makes the environment');
    t = await startTestApp();
    await t.app.listen({ host: '127.0.0.1', port: 0 });
    const address = t.app.server.address();
    baseUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
    hub = await spawnHub(t.config);
  });
  after(async () => {
    await hub?.kill();
    await t?.close();
  });

  it('signs in, gets a message, relays typing, pings, replays after a string lastSeq, and is closed at sign-out', async () => {
    const [b, c, d] = [await makeUser(t), await makeUser(t), await makeUser(t)];
    const phone = freshPhone();
    const { stdout } = await exec(path.join(venv!, 'bin', 'python'), [FLOW, baseUrl, `http://127.0.0.1:${hub.port}`, t.outbox, phone, b.accessToken, b.userId, c.accessToken, d.accessToken], {
      timeout: 60_000,
    });
    const seen = JSON.parse(stdout.trim().split('\n').at(-1) ?? '{}');
    assert.equal(seen.messageNew.message, 'Hello from python-socketio');
    assert.equal(seen.messageNew.roomId, seen.roomId);
    assert.deepEqual(seen.typing, { roomId: seen.roomId, userId: seen.userId });
    assert.deepEqual(seen.echo, { n: 7 });
    assert.equal(seen.first.sender.id, c.userId);
    // Only the event after lastSeq came back, with the next seq, and nothing else followed.
    assert.equal(seen.replayed.sender.id, d.userId);
    assert.equal(seen.replayed.seq, seen.first.seq + 1);
    assert.equal(seen.extra, null);
    assert.equal(seen.signedOut, true, 'the socket stayed open after signing out');
  });
});
