import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { freshPhone, signIn, startTestApp, type TestApp } from '../helpers/app.js';
import { DeviceClient, spawnHub } from '../helpers/hubs.js';
import { freePort } from '../helpers/ports.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const mainJs = path.resolve(here, '../../main.js');
const noUwsAddon = path.resolve(here, '../helpers/no-uws-addon.js');

describe('the runtime', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp();
  });
  after(async () => {
    await t.close();
  });

  it('is Node 24 LTS', () => {
    assert.match(process.version, /^v24\./);
  });

  it("the suite's hubs run uWebSockets.js's native addon (mapped into the hub process) and answer on it", async () => {
    const hub = await spawnHub(t.config);
    try {
      const maps = readFileSync(`/proc/${hub.child.pid}/maps`, 'utf8');
      assert.match(maps, /uws_linux_x64_\d+\.node/, 'the hub process has no uWebSockets.js addon mapped');
      assert.match(hub.output(), /"engine":"uws"/);
      const session = await signIn(t, freshPhone());
      const client = new DeviceClient(session.accessToken);
      await client.connect(hub.port);
      assert.deepEqual(await client.socket!.timeout(5_000).emitWithAck('hub.ping', { n: 1 }), { n: 1 });
      client.close();
    } finally {
      await hub.kill();
    }
  });

  it('a hub whose uWebSockets.js addon cannot load refuses to start, naming Node, glibc and the way out', async () => {
    const port = await freePort();
    const child = spawn(process.execPath, ['--import', noUwsAddon, mainJs, '--role=realtime'], {
      env: { ...process.env, MONGODB_URL: t.config.MONGODB_URL, MONGODB_DB: t.config.MONGODB_DB, REDIS_URL: t.config.REDIS_URL, REDIS_PREFIX: t.config.REDIS_PREFIX, JWT_SECRET: t.config.JWT_SECRET, SOCKET_ENGINE: 'uws', SOCKET_PORT: String(port) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    assert.equal(code, 2, output);
    assert.match(output, new RegExp(`SOCKET_ENGINE=uws, but the uWebSockets\\.js addon does not load on Node ${process.version.replaceAll('.', '\\.')}`));
    assert.match(output, /glibc \d+\.\d+/);
    assert.match(output, /GLIBC_2\.38' not found/);
    assert.match(output, /set SOCKET_ENGINE=ws/);
    // Nothing listened meanwhile.
    const answered = await fetch(`http://127.0.0.1:${port}/socket.io/?EIO=4&transport=polling`).then(() => true, () => false);
    assert.equal(answered, false);
  });

  it('the same hub on SOCKET_ENGINE=ws starts without touching the addon', async () => {
    const hub = await spawnHub(t.config, { SOCKET_ENGINE: 'ws' });
    try {
      assert.doesNotMatch(readFileSync(`/proc/${hub.child.pid}/maps`, 'utf8'), /uws_linux_x64_\d+\.node/);
      assert.match(hub.output(), /"engine":"ws"/);
    } finally {
      await hub.kill();
    }
  });
});
