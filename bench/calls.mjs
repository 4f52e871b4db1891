// `npm run bench:calls`: room calls between Chromium pages (fake camera and microphone, the calls
// example of examples/calls, mediasoup-client) through an sfu node of its own process, with an api
// and a hub process. For each size in PARTICIPANTS (3 and 9): the time from joining the call (the
// start or answer request) to the page's first media byte, and, once every page receives every
// other page's audio and video, the SFU's CPU over SECONDS seconds (its mediasoup worker process,
// where media is forwarded, and its Node process) per forwarded stream, beside the bytes forwarded.
// The pages run on the same two cores as the SFU: their encoders and decoders are most of the
// machine, so the browsers may send less than an idle machine's would; the forwarded rate is printed.
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from '@playwright/test';
import { ensureMediasoupWorker } from '../scripts/mediasoup-worker.mjs';
import { freePort } from '../scripts/stack.mjs';
import { serveCallsExample } from '../examples/calls/serve.mjs';
import { cpuMs, insertGroupRoom, percentile, seedMembers, spawnHub, spawnRole, startBench, stopAll } from './common.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SIZES = (process.env.PARTICIPANTS ?? '3,9').split(',').map(Number);
const SECONDS = Number(process.env.SECONDS ?? 10);
const CHROMIUM = process.env.CHROMIUM_BIN ?? '/usr/bin/chromium';
const log = (line) => process.stderr.write(`[bench:calls] ${line}\n`);

const example = await serveCallsExample();
const { stack, env, ctx, config, children, tmp, port } = await startBench('calls', {
  CORS_ORIGINS: example.url.replace(/\/$/, ''),
  MEDIASOUP_WORKER_BIN: process.env.MEDIASOUP_WORKER_BIN ?? ensureMediasoupWorker(root),
  CALL_RING_TIMEOUT: '120',
});
let browser;
try {
  await spawnRole('api', env, children);
  const hub = await spawnHub(env, children, 'uws');
  const sfu = await spawnRole('sfu', { ...env, SFU_CONTROL_PORT: String(await freePort()), SFU_RTC_MIN_PORT: '44000', SFU_RTC_MAX_PORT: '44999' }, children);
  const workerPid = Number(execFileSync('pgrep', ['-P', String(sfu.pid)], { encoding: 'utf8' }).trim().split('\n')[0]);
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--use-fake-device-for-media-stream', '--use-fake-ui-for-media-stream', '--disable-features=WebRtcHideLocalIpsWithMdns'],
  });

  // Every size's members at once (the seeding numbers users from 0): the first SIZES[0] in the first room, and so on.
  const rooms = SIZES.map((size, i) => ({ size, roomId: `bench-call-${i}`, first: SIZES.slice(0, i).reduce((a, b) => a + b, 0) }));
  const roomOf = (i) => rooms.find((room) => i >= room.first && i < room.first + room.size).roomId;
  const people = await seedMembers(ctx, config, SIZES.reduce((a, b) => a + b, 0), roomOf);
  await ctx.platform.db.collection('room_members').updateMany({}, { $set: { enabled: true, muted: false, publishEnabled: null, removedByAdmin: false } });
  const results = [];
  for (const { size, roomId, first } of rooms) {
    await insertGroupRoom(ctx.platform.db, roomId, people[first].userId, size);
    const members = people.slice(first, first + size);
    const contexts = [];
    const pages = [];
    for (const member of members) {
      const context = await browser.newContext();
      contexts.push(context);
      const page = await context.newPage();
      const query = new URLSearchParams({ api: `http://127.0.0.1:${port}`, hub: `http://127.0.0.1:${hub.port}`, token: member.token });
      await page.goto(`${example.url}?${query}`);
      await page.waitForFunction("document.getElementById('state')?.textContent === 'connected'", undefined, { timeout: 30_000 });
      pages.push(page);
    }
    // The others answer the ring; the first starts the call.
    for (const page of pages.slice(1)) {
      await page.evaluate(() => {
        globalThis.roomCall = new globalThis.calls.RoomCall(globalThis.device);
        globalThis.joined = globalThis.device.next('room-call.incoming', () => true, 60_000).then((incoming) => globalThis.roomCall.join({ callId: incoming.callId }));
      });
    }
    await pages[0].evaluate((room) => {
      globalThis.roomCall = new globalThis.calls.RoomCall(globalThis.device);
      return globalThis.roomCall.join({ roomId: room });
    }, roomId);
    const expected = 2 * (size - 1);
    const statsOf = (page) => page.evaluate(() => globalThis.roomCall.stats());
    const deadline = Date.now() + 120_000;
    let stats = [];
    for (;;) {
      stats = await Promise.all(pages.map(statsOf));
      if (stats.every((s) => s.consumers.length === expected && s.consumers.every((c) => c.bytes > 0))) break;
      if (Date.now() > deadline) {
        const seen = stats.map((s) => `${s.consumers.filter((c) => c.bytes > 0).length}/${s.consumers.length}${s.errors.length ? ` (${s.errors.join('; ')})` : ''}`);
        throw new Error(`${size} participants: not every page received every stream within 120 s; streams with bytes per page: ${seen.join(', ')}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const firstByte = stats.map((s) => s.firstByteMs).sort((a, b) => a - b);
    const bytes = (all) => all.reduce((sum, s) => sum + s.consumers.reduce((n, c) => n + c.bytes, 0), 0);
    const before = { worker: cpuMs(workerPid), node: cpuMs(sfu.pid), bytes: bytes(stats), at: performance.now() };
    await new Promise((resolve) => setTimeout(resolve, SECONDS * 1000));
    const after = { worker: cpuMs(workerPid), node: cpuMs(sfu.pid), bytes: bytes(await Promise.all(pages.map(statsOf))), at: performance.now() };
    const seconds = (after.at - before.at) / 1000;
    const streams = size * expected;
    const result = {
      size,
      streams,
      firstByteP50: percentile(firstByte, 0.5),
      firstByteMax: firstByte.at(-1),
      workerMsPerS: (after.worker - before.worker) / seconds,
      nodeMsPerS: (after.node - before.node) / seconds,
      mbitPerS: ((after.bytes - before.bytes) * 8) / seconds / 1e6,
    };
    results.push(result);
    log(
      `${size} participants, ${streams} forwarded streams: join to first media byte p50 ${Math.round(result.firstByteP50)} ms (max ${Math.round(result.firstByteMax)}); ` +
        `SFU worker ${result.workerMsPerS.toFixed(1)} ms CPU/s (${((result.workerMsPerS / streams) * 1000).toFixed(0)} µs/s per stream), its node process ${result.nodeMsPerS.toFixed(1)} ms/s; ` +
        `${result.mbitPerS.toFixed(2)} Mbit/s received by the pages (${((result.workerMsPerS / Math.max(result.mbitPerS, 0.001))).toFixed(2)} ms CPU per Mbit)`,
    );
    for (const page of pages) await page.evaluate(() => globalThis.roomCall.leave()).catch(() => undefined);
    await Promise.all(contexts.map((context) => context.close()));
  }
  process.stdout.write(`${JSON.stringify({ bench: 'calls', seconds: SECONDS, results })}\n`);
} finally {
  await browser?.close();
  await example.close();
  await stopAll(children, stack, tmp, ctx);
}
