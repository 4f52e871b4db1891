import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { bearer, signIn, startTestApp, type TestApp } from '../helpers/app.js';

const SECRET = 'turn-shared-secret-for-tests';

/** Allocates a relay with coturn's own client; true when the allocation and a relayed exchange worked. */
function allocate(port: number, username: string, password: string): Promise<{ ok: boolean; output: string }> {
  return new Promise((resolve) => {
    const child = spawn('turnutils_uclient', ['-u', username, '-w', password, '-p', String(port), '-e', '127.0.0.1', '-n', '2', '-m', '1', '-y', '-c', '127.0.0.1']);
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ ok: code === 0 && /Total lost packets 0/.test(output) && !/Cannot complete Allocation/.test(output), output });
    });
  });
}

describe('ICE servers and TURN credentials against a real turnserver', () => {
  let t: TestApp;
  let turn: ChildProcess;
  let port: number;

  before(async () => {
    // The local stack's coturn, as `npm start` runs it (scripts/stack.mjs), on the test's own ports.
    const { startTurn } = (await import(pathToFileURL(path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../scripts/stack.mjs')).href)) as {
      startTurn(options: { secret: string; minPort: number; maxPort: number }): Promise<{ child: ChildProcess; port: number }>;
    };
    ({ child: turn, port } = await startTurn({ secret: SECRET, minPort: 51000, maxPort: 51999 }));
    t = await startTestApp({ TURN_SECRET: SECRET, TURN_URLS: `turn:127.0.0.1:${port}?transport=udp`, STUN_URLS: `stun:127.0.0.1:${port}`, TURN_CREDENTIAL_TTL: '3' });
  });
  after(async () => {
    turn.kill('SIGKILL');
    await t.close();
  });

  it('hands out STUN and TURN URLs with TURN REST credentials in coturn\'s scheme', async () => {
    const session = await signIn(t);
    const res = await t.app.inject({ url: '/api/calls/ice-servers', headers: bearer(session.accessToken) });
    assert.equal(res.statusCode, 200);
    const body = res.json();
    assert.equal(body.ttl, 3);
    assert.deepEqual(body.iceServers[0], { urls: [`stun:127.0.0.1:${port}`] });
    const turnServer = body.iceServers[1];
    const [expiry, userId] = turnServer.username.split(':');
    assert.equal(userId, session.userId);
    assert.ok(Math.abs(Number(expiry) - (Date.now() / 1000 + 3)) < 2);
    assert.equal(Date.parse(body.expiresAt), Number(expiry) * 1000);
  });

  it('the credentials allocate a relay; altered or expired ones are refused', async () => {
    const session = await signIn(t);
    const res = await t.app.inject({ url: '/api/calls/ice-servers', headers: bearer(session.accessToken) });
    const { username, credential } = res.json().iceServers[1];

    const good = await allocate(port, username, credential);
    assert.ok(good.ok, good.output.slice(-800));

    const alteredPassword = `${credential.slice(0, -2)}${credential.endsWith('AA') ? 'BB' : 'AA'}`;
    assert.equal((await allocate(port, username, alteredPassword)).ok, false);
    const [expiry] = username.split(':');
    assert.equal((await allocate(port, `${expiry}:someone-else`, credential)).ok, false);
    assert.equal((await allocate(port, `${Number(expiry) + 3600}:${session.userId}`, credential)).ok, false);

    // The credential lives 3 s here; after that coturn (on real time) refuses it. Rather than wait,
    // the service's clock goes back 4 s: what it issues now expired a second ago.
    t.clock.advance(-4_000);
    const stale = (await t.app.inject({ url: '/api/calls/ice-servers', headers: bearer(session.accessToken) })).json().iceServers[1];
    t.clock.advance(4_000);
    assert.ok(Number(stale.username.split(':')[0]) < Date.now() / 1000, 'issued already expired');
    assert.equal((await allocate(port, stale.username, stale.credential)).ok, false);
  });
});
