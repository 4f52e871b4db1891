// `npm run bench:realtime`: fan-out latency of a room broadcast over 2 hub nodes, sockets held by one
// hub node and its memory per socket, and hub.ping echoes per CPU-second of the hub on uWebSockets.js
// against `ws`. Hubs and load generators are separate processes; the hub's CPU time is read from
// /proc so a saturated load generator shows. Prints one table.
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { cpuMs, forkWorker, percentile, rssKb, seedMembers, spawnHub as spawnBenchHub, startBench, stopAll, stopHub } from './common.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const FANOUT_SIZES = (process.env.FANOUT_SIZES ?? '1000,10000').split(',').map(Number);
const WAVES = Number(process.env.WAVES ?? 10);
// One process may hold at most 20,000 descriptors here (hard limit, not raisable): room for the rest.
const CAPACITY = Number(process.env.CAPACITY ?? 19_000);
const SETTLE_MS = Number(process.env.SETTLE_SECONDS ?? 60) * 1000;
const ECHO_SOCKETS = Number(process.env.ECHO_SOCKETS ?? 100);
const ECHO_SECONDS = Number(process.env.ECHO_SECONDS ?? 8);
const CLIENT_PROCESSES = 2;
// The engine of the capacity phase (uws; ws to compare).
const CAPACITY_ENGINE = process.env.CAPACITY_ENGINE ?? 'uws';
const PHASES = new Set((process.env.PHASES ?? 'fanout,capacity,echo').split(','));
const ROOM = 'bench-room';

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const log = (message) => process.stderr.write(`[bench] ${message}\n`);

const { tmp, stack, env, config, ctx, children } = await startBench('rt');

const spawnHub = (engine) => spawnBenchHub(env, children, engine);

/** The hub's V8 heap (used and total) and memory outside it, in MB, from its /metrics. */
async function heapOf(hub) {
  const text = await (await fetch(`http://127.0.0.1:${hub.opsPort}/metrics`)).text();
  const mb = (name) => (Number(new RegExp(`^${name} (\\S+)`, 'm').exec(text)?.[1] ?? NaN) / 1024 / 1024).toFixed(0);
  return `heap used ${mb('nodejs_heap_size_used_bytes')} MB of ${mb('nodejs_heap_size_total_bytes')} MB, external ${mb('nodejs_external_memory_bytes')} MB`;
}

function spawnClient() {
  return forkWorker(path.join(root, 'bench/client-worker.mjs'), children);
}

async function connect(clients, targets) {
  const share = Math.ceil(targets.length / clients.length);
  const results = await Promise.all(clients.map((c, i) => c.call({ cmd: 'connect', targets: targets.slice(i * share, (i + 1) * share), concurrency: 50 })));
  return results.reduce((sum, r) => sum + r.connected, 0);
}

const rows = [];
try {
  const needed = Math.max(CAPACITY, ...FANOUT_SIZES);
  log(`seeding ${needed} users and devices`);
  const people = await seedMembers(ctx, config, needed, ROOM);

  // 1. Fan-out over two hub nodes.
  const hubs = PHASES.has('fanout') ? [await spawnHub('uws'), await spawnHub('uws')] : [];
  for (const n of PHASES.has('fanout') ? FANOUT_SIZES : []) {
    const clients = Array.from({ length: CLIENT_PROCESSES }, spawnClient);
    const targets = people.slice(0, n).map((p, i) => ({ port: hubs[i % 2].port, token: p.token }));
    const connected = await connect(clients, targets);
    log(`fan-out ${n}: ${connected} sockets connected`);
    await sleep(1000);
    const cpuBefore = hubs.map((h) => cpuMs(h.pid));
    const clientCpuBefore = clients.map((c) => cpuMs(c.pid));
    const started = Date.now();
    for (let wave = 0; wave < WAVES; wave++) {
      ctx.events.toRoom(ROOM, 'message.new', { roomId: ROOM, messageId: `wave-${wave}`, sentAt: performance.timeOrigin + performance.now() });
      await sleep(1000);
    }
    await sleep(1000);
    const seconds = (Date.now() - started) / 1000;
    const hubCpu = hubs.map((h, i) => cpuMs(h.pid) - cpuBefore[i]);
    const clientCpu = clients.map((c, i) => cpuMs(c.pid) - clientCpuBefore[i]);
    const latencies = (await Promise.all(clients.map((c) => c.call({ cmd: 'latencies' })))).flatMap((r) => r.latencies).sort((a, b) => a - b);
    rows.push([
      `fan-out, room of ${n} over 2 hub nodes`,
      `p50 ${percentile(latencies, 50).toFixed(1)} ms, p99 ${percentile(latencies, 99).toFixed(1)} ms, max ${latencies.at(-1).toFixed(1)} ms; delivered ${latencies.length}/${connected * WAVES} (${((100 * latencies.length) / (connected * WAVES)).toFixed(2)}%)`,
      `hub CPU ${hubCpu.map((ms) => `${((100 * ms) / 1000 / seconds).toFixed(0)}%`).join(' + ')}; load generators ${clientCpu.map((ms) => `${((100 * ms) / 1000 / seconds).toFixed(0)}%`).join(' + ')}`,
    ]);
    await Promise.all(clients.map((c) => c.call({ cmd: 'close' })));
    clients.forEach((c) => c.kill());
    await sleep(1500);
  }
  await Promise.all(hubs.map(stopHub));

  // 2. Capacity of one hub node.
  if (PHASES.has('capacity')) {
    const hub = await spawnHub(CAPACITY_ENGINE);
    await sleep(2000);
    const before = rssKb(hub.pid);
    const clients = Array.from({ length: 3 }, spawnClient);
    const connected = await connect(clients, people.slice(0, CAPACITY).map((p) => ({ port: hub.port, token: p.token })));
    // RSS shortly after the connection storm, and after a minute idle (two ping rounds), when V8 has
    // had time to give back what the storm left: the state a hub holds idle sockets in.
    await sleep(5000);
    const early = rssKb(hub.pid);
    const samples = [early];
    // The hub's CPU while it holds the idle sockets (keep-alive pings, timers, GC), over the last half of the minute.
    let idleCpu = { ms: 0, from: 0, seconds: 0 };
    for (let waited = 5000; waited < SETTLE_MS; waited += 5000) {
      if (waited >= SETTLE_MS / 2 && !idleCpu.from) idleCpu = { ms: cpuMs(hub.pid), from: performance.now(), seconds: 0 };
      await sleep(5000);
      samples.push(rssKb(hub.pid));
    }
    idleCpu = { ms: cpuMs(hub.pid) - idleCpu.ms, from: idleCpu.from, seconds: (performance.now() - idleCpu.from) / 1000 };
    log(`hub RSS every 5 s while idle (MB): ${samples.map((kb) => (kb / 1024).toFixed(0)).join(' ')}; then ${await heapOf(hub)}`);
    const after = samples.at(-1);
    const perSocket = (kb) => (((kb - before) * 1024) / connected / 1000).toFixed(1);
    rows.push([
      `capacity, idle authenticated sockets on 1 hub node${CAPACITY_ENGINE === 'uws' ? '' : ` (${CAPACITY_ENGINE})`}`,
      `${connected} sockets held; hub RSS ${(before / 1024).toFixed(0)} MB → ${(after / 1024).toFixed(0)} MB after ${SETTLE_MS / 1000} s idle: ${perSocket(after)} KB per socket (${perSocket(early)} KB 5 s after connecting)`,
      `limit: 20,000 descriptors per process on this machine; idle upkeep ${(idleCpu.ms / idleCpu.seconds).toFixed(0)} ms of CPU a second (${((1000 * idleCpu.ms) / idleCpu.seconds / connected).toFixed(1)} µs per socket per second)`,
    ]);
    await Promise.all(clients.map((c) => c.call({ cmd: 'close' })));
    clients.forEach((c) => c.kill());
    await stopHub(hub);
  }

  // 3. Echo throughput per CPU-second of the hub: uWebSockets.js against ws.
  const echo = {};
  for (const engine of PHASES.has('echo') ? ['uws', 'ws'] : []) {
    const hub = await spawnHub(engine);
    const clients = Array.from({ length: CLIENT_PROCESSES }, spawnClient);
    await connect(clients, people.slice(0, ECHO_SOCKETS).map((p) => ({ port: hub.port, token: p.token })));
    await sleep(1000);
    const cpu0 = cpuMs(hub.pid);
    const clientCpu0 = clients.map((c) => cpuMs(c.pid));
    const started = Date.now();
    const counts = await Promise.all(clients.map((c) => c.call({ cmd: 'echo', durationMs: ECHO_SECONDS * 1000, inflight: 4, bytes: 64 })));
    const seconds = (Date.now() - started) / 1000;
    const hubCpuSeconds = (cpuMs(hub.pid) - cpu0) / 1000;
    const clientCpu = clients.map((c, i) => (cpuMs(c.pid) - clientCpu0[i]) / 1000 / seconds);
    const echoes = counts.reduce((sum, r) => sum + r.echoes, 0);
    echo[engine] = echoes / hubCpuSeconds;
    rows.push([
      `echo, socket.io on ${engine === 'uws' ? 'uWebSockets.js' : 'ws'} (${ECHO_SOCKETS} sockets)`,
      `${Math.round(echoes / seconds)} echoes/s; ${Math.round(echo[engine])} echoes per hub CPU-second`,
      `hub CPU ${((100 * hubCpuSeconds) / seconds).toFixed(0)}%; load generators ${clientCpu.map((f) => `${(100 * f).toFixed(0)}%`).join(' + ')}`,
    ]);
    await Promise.all(clients.map((c) => c.call({ cmd: 'close' })));
    clients.forEach((c) => c.kill());
    await stopHub(hub);
  }
  if (PHASES.has('echo')) rows.push(['echo ratio uWebSockets.js / ws, per hub CPU-second', `${(echo.uws / echo.ws).toFixed(2)}×`, '']);
} finally {
  await stopAll(children, stack, tmp, ctx);
}

const widths = [0, 1, 2].map((i) => Math.max(...rows.map((r) => r[i].length), 6));
const line = (r) => `| ${r.map((cell, i) => cell.padEnd(widths[i])).join(' | ')} |`;
process.stdout.write(
  [
    `Realtime hub benchmark, ${os.cpus().length} cores, ${new Date().toISOString()}`,
    line(['measure', 'result', 'notes']),
    `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`,
    ...rows.map(line),
    '',
  ].join('\n'),
);
process.exit(0);
