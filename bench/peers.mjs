// `npm run bench:peers`: the hub against two peers on this machine in one run, with one load generator
// (bench/client-worker.mjs) that speaks each protocol:
// - soketi (npm, the Pusher protocol, on the same uWebSockets.js build as the hub, Redis adapter), and
// - plain socket.io on `ws` with the Redis adapter, as most projects run it (bench/peers/socketio-server.mjs).
// Each server runs as 2 nodes sharing Redis; SUBSCRIBERS connections (half on each node) are held by 2
// load-generator processes. Per server: RSS per idle connection (both nodes' RSS before and after
// connecting, from /proc), then WAVES broadcasts a second to every subscriber: fan-out p50/p99 (sent
// → received at the client) and the nodes' CPU-ms per 1,000 deliveries (from /proc, so a slow load
// generator does not decide), also net of what the nodes spend holding the connections idle
// (IDLE_SECONDS measured before the broadcasts: keep-alive pings and timers). Broadcasts enter as each server takes them from an application: the
// hub's and socket.io's through their Redis emitter, soketi's through its HTTP API (signed, to node 1).
// Soketi is installed on first use into bench/peers/node_modules from the npm registry (its lockfile).
import { execFileSync, spawn } from 'node:child_process';
import { createHash, createHmac } from 'node:crypto';
import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Emitter } from '@socket.io/redis-emitter';
import { Redis } from 'ioredis';
import { freePort } from '../scripts/stack.mjs';
import { cpuMs, forkWorker, netOfUpkeep, percentile, rssKb, seedMembers, spawnRole, startBench, stopAll } from './common.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const peersDir = path.join(root, 'bench/peers');
const SUBSCRIBERS = Number(process.env.SUBSCRIBERS ?? 10_000);
const WAVES = Number(process.env.WAVES ?? 10);
const IDLE_SECONDS = Number(process.env.IDLE_SECONDS ?? 5);
const SERVERS = (process.env.SERVERS ?? 'hub,soketi,socket.io').split(',');
const ROOM = 'bench-room';
const PUSHER = { appId: 'bench', key: 'bench-key', secret: 'bench-secret' };

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const log = (message) => process.stderr.write(`[bench] ${message}\n`);

if (SERVERS.includes('soketi') && !existsSync(path.join(peersDir, 'node_modules/@soketi/soketi'))) {
  log('installing soketi into bench/peers (npm ci, once)');
  // Scripts are not run: soketi's uWebSockets.js is the npm build the hub uses (the lockfile's override), which needs none.
  execFileSync('npm', ['ci', '--ignore-scripts', '--no-audit', '--no-fund'], { cwd: peersDir, stdio: ['ignore', 'inherit', 'inherit'] });
}

const { tmp, stack, env, config, ctx, children } = await startBench('peers');

/** A process of a server's node, ready once its stdout shows `ready`. */
async function spawnNode(args, nodeEnv, ready) {
  const child = spawn(process.execPath, args, { env: nodeEnv, stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  await new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (chunk) => {
      out += chunk;
      if (out.includes(ready)) resolve();
    });
    child.once('exit', (code) => reject(new Error(`${args.join(' ')} exited ${code}: ${out.slice(-500)}`)));
  });
  child.stdout.resume();
  return child;
}

/** Each server: how to start one node, how a subscriber connects to it, how to broadcast one message to all. */
const servers = {
  async hub() {
    const nodes = [];
    for (let i = 0; i < 2; i++) {
      const [port, opsPort] = [await freePort(), await freePort()];
      const child = await spawnRole('realtime', { ...env, SOCKET_PORT: String(port), SOCKET_ENGINE: 'uws', OPS_PORT: String(opsPort) }, children);
      nodes.push({ port, pid: child.pid });
    }
    return {
      label: 'this hub (socket.io protocol on uWebSockets.js, 2 nodes, Redis adapter)',
      nodes,
      target: (node, person) => ({ port: node.port, token: person.token }),
      broadcast: async (payload) => ctx.events.toRoom(ROOM, 'message.new', payload),
    };
  },
  async 'socket.io'() {
    const redis = new Redis(env.REDIS_URL);
    const emitter = new Emitter(redis);
    const nodes = [];
    for (let i = 0; i < 2; i++) {
      const port = await freePort();
      const child = await spawnNode([path.join(peersDir, 'socketio-server.mjs')], { ...process.env, PORT: String(port), REDIS_URL: env.REDIS_URL, ROOM }, 'listening');
      nodes.push({ port, pid: child.pid });
    }
    return {
      label: 'plain socket.io 4 on ws (2 nodes, Redis adapter)',
      nodes,
      target: (node, person) => ({ port: node.port, token: person.token }),
      broadcast: async (payload) => emitter.to(ROOM).emit('message.new', payload),
      close: () => redis.disconnect(),
    };
  },
  async soketi() {
    const redis = new URL(env.REDIS_URL);
    const nodes = [];
    for (let i = 0; i < 2; i++) {
      const [port, metricsPort] = [await freePort(), await freePort()];
      const child = await spawnNode(
        [path.join(peersDir, 'node_modules/@soketi/soketi/bin/server.js'), 'start'],
        {
          ...process.env,
          SOKETI_PORT: String(port),
          SOKETI_METRICS_SERVER_PORT: String(metricsPort),
          SOKETI_ADAPTER_DRIVER: 'redis',
          SOKETI_DB_REDIS_HOST: redis.hostname,
          SOKETI_DB_REDIS_PORT: redis.port,
          SOKETI_DEFAULT_APP_ID: PUSHER.appId,
          SOKETI_DEFAULT_APP_KEY: PUSHER.key,
          SOKETI_DEFAULT_APP_SECRET: PUSHER.secret,
          // Its AWS SDK (unused here) warns of its end of support at start.
          NODE_NO_WARNINGS: '1',
        },
        'Server is up and running',
      );
      nodes.push({ port, pid: child.pid });
    }
    return {
      label: 'soketi 1.6.1 (Pusher protocol on the same uWebSockets.js build, 2 nodes, Redis adapter)',
      nodes,
      target: (node) => ({ port: node.port, pusher: { appKey: PUSHER.key, channel: ROOM } }),
      broadcast: (payload) => pusherTrigger(nodes[0].port, ROOM, 'message.new', payload),
    };
  },
};

/** A server-side trigger through the Pusher HTTP API, signed as the Pusher libraries sign it. */
async function pusherTrigger(port, channel, name, payload) {
  const body = JSON.stringify({ name, channel, data: JSON.stringify(payload) });
  const pathname = `/apps/${PUSHER.appId}/events`;
  const params = new URLSearchParams({ auth_key: PUSHER.key, auth_timestamp: String(Math.floor(Date.now() / 1000)), auth_version: '1.0', body_md5: createHash('md5').update(body).digest('hex') });
  const query = [...params.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, v]) => `${k}=${v}`).join('&');
  const signature = createHmac('sha256', PUSHER.secret).update(`POST\n${pathname}\n${query}`).digest('hex');
  const res = await fetch(`http://127.0.0.1:${port}${pathname}?${query}&auth_signature=${signature}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  if (res.status !== 200) throw new Error(`soketi's HTTP API answered ${res.status}: ${await res.text()}`);
}

const rows = [];
const figures = {};
try {
  log(`seeding ${SUBSCRIBERS} members`);
  const people = await seedMembers(ctx, config, SUBSCRIBERS, ROOM);
  for (const name of SERVERS) {
    const server = await servers[name]();
    await sleep(2000);
    const rssBefore = server.nodes.map((n) => rssKb(n.pid));
    const clients = [0, 1].map(() => forkWorker(path.join(root, 'bench/client-worker.mjs'), children));
    const targets = people.map((person, i) => server.target(server.nodes[i % 2], person));
    const share = Math.ceil(targets.length / clients.length);
    const connected = (await Promise.all(clients.map((c, i) => c.call({ cmd: 'connect', targets: targets.slice(i * share, (i + 1) * share), concurrency: 50 })))).reduce((sum, r) => sum + r.connected, 0);
    log(`${name}: ${connected} of ${SUBSCRIBERS} subscribed`);
    await sleep(5000);
    const rssAfter = server.nodes.map((n) => rssKb(n.pid));
    // What holding the connections costs with nothing sent (keep-alive pings and timers), to read the broadcasts' own cost apart.
    const idleBefore = server.nodes.map((n) => cpuMs(n.pid));
    await sleep(IDLE_SECONDS * 1000);
    const idlePerSecond = server.nodes.reduce((sum, n, i) => sum + cpuMs(n.pid) - idleBefore[i], 0) / IDLE_SECONDS;
    const cpuBefore = server.nodes.map((n) => cpuMs(n.pid));
    const started = Date.now();
    for (let wave = 0; wave < WAVES; wave++) {
      await server.broadcast({ roomId: ROOM, messageId: `wave-${wave}`, sentAt: performance.timeOrigin + performance.now() });
      await sleep(1000);
    }
    await sleep(1000);
    const seconds = (Date.now() - started) / 1000;
    const nodeCpu = server.nodes.reduce((sum, n, i) => sum + cpuMs(n.pid) - cpuBefore[i], 0);
    const latencies = (await Promise.all(clients.map((c) => c.call({ cmd: 'latencies' })))).flatMap((r) => r.latencies).sort((a, b) => a - b);
    const perIdle = ((rssAfter[0] + rssAfter[1] - rssBefore[0] - rssBefore[1]) / connected).toFixed(1);
    const netCpu = netOfUpkeep(nodeCpu, idlePerSecond * seconds);
    figures[name] = { cpu: nodeCpu / (latencies.length / 1000), net: netCpu === null ? null : netCpu / (latencies.length / 1000), rss: Number(perIdle), p50: percentile(latencies, 50), p99: percentile(latencies, 99) };
    rows.push([
      server.label,
      `${(nodeCpu / (latencies.length / 1000)).toFixed(1)}`,
      `${perIdle}`,
      `${percentile(latencies, 50).toFixed(1)} / ${percentile(latencies, 99).toFixed(1)}`,
      `${latencies.length}/${connected * WAVES}; nodes' CPU ${((100 * nodeCpu) / 1000 / seconds).toFixed(0)}% over ${seconds.toFixed(0)} s, ${idlePerSecond.toFixed(0)} ms/s when idle: ${figures[name].net === null ? 'not measurable net of that (the upkeep is half the CPU or more)' : `${figures[name].net.toFixed(1)} CPU-ms per 1,000 net of that`}`,
    ]);
    await Promise.all(clients.map((c) => c.call({ cmd: 'close' })));
    clients.forEach((c) => c.kill());
    for (const node of server.nodes) process.kill(node.pid, 'SIGTERM');
    server.close?.();
    await sleep(2000);
  }
} finally {
  await stopAll(children, stack, tmp, ctx);
}

const header = ['server', 'CPU-ms per 1,000 deliveries', 'RSS KB per idle connection', 'fan-out p50 / p99 ms', 'delivered; notes'];
const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
const line = (r) => `| ${r.map((cell, i) => cell.padEnd(widths[i])).join(' | ')} |`;
process.stdout.write(
  [
    `Peers: ${SUBSCRIBERS} subscribers over 2 nodes, ${WAVES} broadcasts 1 s apart, ${os.cpus().length} cores, ${new Date().toISOString()}`,
    line(header),
    `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`,
    ...rows.map(line),
    '',
    ...comparison(),
    '',
  ].join('\n'),
);

/** The hub's figure over the better peer's, per measure: below 1 is ahead of both. */
function comparison() {
  const peers = Object.keys(figures).filter((name) => name !== 'hub');
  if (!figures.hub || peers.length === 0) return [];
  const ratio = (key) => (figures.hub[key] / Math.min(...peers.map((name) => figures[name][key]))).toFixed(2);
  const measured = ['hub', ...peers].every((name) => figures[name].net !== null);
  return [
    `hub / best peer, CPU-ms per 1,000 deliveries: ${ratio('cpu')}×`,
    measured
      ? `hub / best peer, CPU-ms per 1,000 deliveries net of the idle connections' upkeep: ${ratio('net')}×`
      : `hub / best peer, net of the idle connections' upkeep: not measurable in this run (a server's upkeep was half its CPU or more)`,
    `hub / best peer, RSS per idle connection: ${ratio('rss')}×`,
    `hub / best peer, fan-out p99: ${ratio('p99')}×`,
  ];
}
process.exit(0);
