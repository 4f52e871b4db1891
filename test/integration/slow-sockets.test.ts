import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { makeRoom, makeUser } from '../helpers/factories.js';
import { DeviceClient, spawnHub, type HubProcess } from '../helpers/hubs.js';
import { until } from '../helpers/wait.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const SLOW_BYTES = 64 * 1024;
const GRACE_MS = 1_500;

/** Resident memory of a process, in bytes (Linux). */
async function rssOf(pid: number): Promise<number> {
  const { readFile } = await import('node:fs/promises');
  const kib = /VmRSS:\s+(\d+) kB/.exec(await readFile(`/proc/${pid}/status`, 'utf8'))?.[1];
  return Number(kib) * 1024;
}

for (const engine of ['uws', 'ws']) describe(`a socket that stops reading (${engine})`, () => {
  let t: TestApp;
  let hub: HubProcess;
  const clients: DeviceClient[] = [];

  before(async () => {
    t = await startTestApp();
    hub = await spawnHub(t.config, { SOCKET_ENGINE: engine, HUB_SLOW_SOCKET_BYTES: String(SLOW_BYTES), HUB_SLOW_SOCKET_GRACE_MS: String(GRACE_MS) });
  });
  after(async () => {
    for (const client of clients) client.close();
    await hub?.kill('SIGKILL');
    await t?.close();
  });

  it('holds its device events in the inbox, is disconnected, and gets every event once after reconnecting; a reading socket is not touched', async () => {
    const [owner, tunnel, reader] = await Promise.all([makeUser(t), makeUser(t), makeUser(t)]);
    const room = await makeRoom(t, owner, { members: [tunnel, reader] });
    const slow = new DeviceClient(tunnel.accessToken);
    const fast = new DeviceClient(reader.accessToken);
    clients.push(slow, fast);
    await Promise.all([slow.connect(hub.port), fast.connect(hub.port)]);
    let broadcasts = 0;
    fast.socket!.on('message.new', () => broadcasts++);
    const rssBefore = await rssOf(hub.child.pid!);

    slow.pauseReading();
    const slowGone = slow.disconnected();
    // 8 MB of room broadcasts (more than the kernel's buffers hold), paced as a busy room would be,
    // with device events to both between them.
    const text = 'x'.repeat(16 * 1024);
    let sent = 0;
    for (let i = 0; i < 500; i++) {
      t.ctx.events.toRoom(room.id, 'message.new', { roomId: room.id, messageId: `m${i}`, text });
      if (i % 12 === 0) {
        await Promise.all([tunnel, reader].map((s) => t.ctx.events.toDevice(s.deviceId, 'e2ee.rotation-due', { roomId: room.id, reason: 'MEMBER_LEFT' })));
        sent++;
        await sleep(5);
      }
    }

    // The reading socket got everything live, in order, once.
    await fast.until((received) => received.length === sent, 15_000);
    assert.deepEqual(fast.received.map((r) => r.seq), Array.from({ length: sent }, (_, i) => i + 1));
    await until(() => broadcasts >= 500, 'all 500 broadcasts on the reading socket', 15_000);

    // The hub let the silent socket go within the grace period (and its memory with it).
    // The hub lets the silent socket go: uWebSockets.js closes it at once (the hub counts one socket on
    // its operations port); on ws the hub says so in its log, and the close waits for the client to read.
    const socketsHeld = async () => Number(/^hub_sockets (\d+)$/m.exec(await (await fetch(`http://127.0.0.1:${hub.opsPort}/metrics`)).text())?.[1]);
    const letGo = async () => (engine === 'uws' ? (await socketsHeld()) === 1 : hub.output().includes('slow socket disconnected'));
    await until(letGo, 'the hub to let the silent socket go', GRACE_MS + 10_000);
    const rssAfter = await rssOf(hub.child.pid!);
    slow.resumeReading();
    const reason = await Promise.race([slowGone, sleep(5_000).then(() => 'still connected')]);
    assert.notEqual(reason, 'still connected', 'the hub kept a socket that read nothing');
    assert.ok(rssAfter - rssBefore < 40 * 1024 * 1024, `the hub grew by ${Math.round((rssAfter - rssBefore) / 1024 / 1024)} MB`);
    assert.ok(!fast.socket!.disconnected, 'the reading socket was disconnected');
    assert.ok(slow.received.length < sent, `the silent socket got all ${sent} device events before it was let go`);

    // Reconnecting with its lastSeq, it gets what it missed from the inbox: every event, once, in order.
    await slow.connect(hub.port);
    await slow.until((received) => received.length > 0 && received.at(-1)!.seq === sent, 10_000);
    assert.deepEqual(slow.received.map((r) => r.seq), Array.from({ length: sent }, (_, i) => i + 1));
    assert.ok(engine === 'uws' || hub.output().includes('slow socket disconnected'), hub.output().slice(-2000));
  });
});
