// `npm run bench:messages`, second part (alone: `npm run bench:post-cost`): what one post costs across
// the whole stack, not the api alone. The roles run as separate processes (api, worker, two hubs)
// over the bench's own Redis and database, and posts go at a fixed rate, round the rooms, into rooms
// of 3 and of 50 whose members are online (a socket each, over both hubs), offline with push tokens
// (the local push provider records each push in the database, as it does under `npm start`), or
// offline without. For each: CPU per post of every process (api, worker, each hub, Redis, the
// database), net of its idle upkeep measured just before, counted until the worker has finished
// every job the posts started. Before that, `npm start`'s shape: every role in one process over the
// file-backed database, at 150 posts/s into rooms of 3 with their members online (with push tokens,
// as phones have).
//
// In the matrix, members online have push tokens (as phones do): a post checks their presence.
// POST_RATES, ROOM_SIZES, MEMBER_STATES (online,tokens,none; empty: only npm start's shape),
// POST_SECONDS and POST_ROOMS (rooms of each size) narrow or widen the matrix; START_SECONDS (15, as
// the issue measured it from outside) is each of npm start's two rows.
import { fork } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, stackEnv, startStack } from '../scripts/stack.mjs';
import { cpuMs, forgetPushReach, forkWorker, percentile, queueDrained, seedGroupRoom, spawnHub, spawnRole, startBench, stopAll } from './common.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const numbers = (text) => text.split(',').map(Number);
const RATES = numbers(process.env.POST_RATES ?? '150,1000');
const SIZES = numbers(process.env.ROOM_SIZES ?? '3,50');
const STATES = (process.env.MEMBER_STATES ?? 'online,tokens,none').split(',').filter(Boolean);
const SECONDS = Number(process.env.POST_SECONDS ?? 6);
const START_SECONDS = Number(process.env.START_SECONDS ?? 15);
const ROOMS = Number(process.env.POST_ROOMS ?? 20);
const IDLE_SECONDS = 3;
const MAX_PUSHES_PER_SECOND = 10_000;
const STATE_NAMES = { online: 'members online', tokens: 'members offline with push tokens', none: 'members offline without push tokens' };
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const log = (message) => process.stderr.write(`[bench] ${message}\n`);

const { tmp, stack, env, config, ctx, children } = await startBench('post', { PUSH_PROVIDER: 'local' });
const rows = [];
/** A row of the table, said as it comes too (a long run shows its progress). */
const row = (entry) => {
  rows.push(entry);
  log(`${entry[0]}: ${entry[1]}`);
};

/** CPU so far of each named process, in ms. */
const snapshot = (pids) => Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, cpuMs(pid)]));

/** Each process's CPU over `fn`, net of its idle upkeep measured over IDLE_SECONDS just before; `fn` answers how many posts it made. */
async function costOf(pids, fn) {
  const quiet0 = snapshot(pids);
  await sleep(IDLE_SECONDS * 1000);
  const quiet1 = snapshot(pids);
  const started = performance.now();
  const result = await fn();
  const seconds = (performance.now() - started) / 1000;
  const busy = snapshot(pids);
  const perPost = Object.fromEntries(
    Object.keys(pids).map((name) => {
      const upkeep = ((quiet1[name] - quiet0[name]) / IDLE_SECONDS) * seconds;
      return [name, Math.max(0, busy[name] - quiet1[name] - upkeep) / result.posts];
    }),
  );
  return { ...result, perPost, seconds };
}

/** Two load-generator processes posting at `perSecond` in all, each round its half of `targets`. */
async function postAt(perSecond, targets, seconds = SECONDS) {
  const generators = [0, 1].map(() => {
    const child = fork(path.join(root, 'bench/http-worker.mjs'), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    children.push(child);
    return child;
  });
  const results = await Promise.all(
    generators.map(
      (child, i) =>
        new Promise((resolve) => {
          child.once('message', resolve);
          child.send({ cmd: 'fixed', perSecond: perSecond / 2, seconds, targets: targets.filter((_, t) => t % 2 === i) });
        }),
    ),
  );
  generators.forEach((child) => child.kill());
  const times = results.flatMap((r) => r.times).sort((a, b) => a - b);
  return { posts: times.length, failures: results.reduce((sum, r) => sum + r.failures, 0), p99: percentile(times, 99), achieved: times.length / Math.max(...results.map((r) => r.elapsed)) };
}

/**
 * Posts at `rate` round `rooms` (each post by the room's first member), then waits for the worker to
 * finish the jobs they started (in the queues of `over`, the context of the stack posted to).
 */
async function postAndDrain(apiPort, rate, rooms, over = ctx, seconds = SECONDS) {
  const targets = rooms.map(({ roomId, people }) => ({ port: apiPort, concurrency: 64, method: 'PUT', path: `/api/messages/${roomId}`, token: people[0].token, body: { roomId, message: 'What a post costs' } }));
  const posted = await postAt(rate, targets, seconds);
  const drained = await queueDrained(over, 'message-push', 60_000);
  // The last broadcasts read by the hubs, the last pushes recorded.
  await sleep(300);
  return { ...posted, drained };
}

const ms = (value) => (value >= 10 ? value.toFixed(1) : value.toFixed(2));
/** The service's own processes (every role) against the api's share: the post's cost beyond the request. */
const serviceOver = (perPost, service) => service.reduce((sum, name) => sum + perPost[name], 0) / perPost.api;

try {
  const sockets = forkWorker(path.join(root, 'bench/client-worker.mjs'), children);
  // `npm start`'s shape: one process with every role but the SFU (idle while posting), the file-backed
  // database, the service's own defaults (development, logs at info to a pipe this script reads and
  // drops). First, with the machine to itself: measured after the matrix, the same shape cost a fifth
  // more (the matrix's database and Redis still busy with their own upkeep).
  const startDir = path.join(tmp, 'npm-start');
  // The bench's chain serves this stack too (one chain is enough to start the wallets).
  Object.assign(process.env, { EVM_RPC_URL: stack.evmRpcUrl, USDT_TOKEN_ADDRESS: stack.usdtAddress });
  const own = await startStack({ dataDir: startDir, persistent: true });
  try {
    const [httpPort, socketPort] = [await freePort(), await freePort()];
    const startEnv = { ...process.env, ...stackEnv(own), MONGODB_DB: env.MONGODB_DB, JWT_SECRET: env.JWT_SECRET, HTTP_PORT: String(httpPort), SOCKET_PORT: String(socketPort) };
    const startCtx = await ctxFor(startEnv);
    const rooms = [];
    for (let r = 0; r < ROOMS; r++) rooms.push({ roomId: `start-3-${r}`, people: await seedGroupRoom(startCtx, config, `start-3-${r}`, 3, 100_000 + r * 3) });
    const members = rooms.flatMap((room) => room.people);
    // Phones online have push tokens too: each post checks that every other member's device is online.
    await startCtx.platform.db.collection('devices').updateMany({ _id: { $in: members.map((p) => p.deviceId) } }, { $set: { pushToken: { token: 'fcm-bench-device', provider: 'FCM', updatedAt: new Date() } } });
    const service = await spawnRole('api,realtime,worker', startEnv, children);
    const { connected } = await sockets.call({ cmd: 'connect', targets: members.map((p) => ({ port: socketPort, token: p.token })), concurrency: 50 });
    log(`npm start's shape: ${connected} members online`);
    await sleep(1500);
    const startPids = { service: service.pid, redis: own.pids.redis, database: own.pids.mongo };
    // Twice in a row: from the service's first post (its code still being compiled), then as a
    // process that has been posting runs.
    for (const phase of ['from its first post', 'the next seconds']) {
      const run = await costOf(startPids, () => postAndDrain(httpPort, 150, rooms, startCtx, START_SECONDS));
      const p = run.perPost;
      const total = p.service + p.redis + p.database;
      row([
        `npm start's shape (one process, file-backed database): 150 posts/s, rooms of 3, members online; ${phase}`,
        `CPU per post: service ${ms(p.service)} ms, Redis ${ms(p.redis)} ms, database ${ms(p.database)} ms; the stack ${ms(total)} ms a post: ${((total * run.achieved) / 10).toFixed(0)}% of a core at ${Math.round(run.achieved)} posts/s; p99 ${run.p99.toFixed(1)} ms, failures ${run.failures}`,
      ]);
    }
    await sockets.call({ cmd: 'close' });
    await startCtx.close();
    // Stopped before its stack, as npm start stops it.
    const exited = new Promise((resolve) => service.once('exit', resolve));
    service.kill('SIGTERM');
    await exited;
  } finally {
    await own.stop();
  }
  // Rooms of each size, members of their own (so a room's members are online or not together).
  const roomsBySize = new Map();
  let offset = 0;
  for (const size of SIZES) {
    const rooms = [];
    for (let r = 0; r < ROOMS; r++) {
      const roomId = `cost-${size}-${r}`;
      rooms.push({ roomId, people: await seedGroupRoom(ctx, config, roomId, size, offset) });
      offset += size;
    }
    roomsBySize.set(size, rooms);
  }
  const hubs = [await spawnHub(env, children, 'uws'), await spawnHub(env, children, 'uws')];
  const apiPort = await freePort();
  const api = await spawnRole('api', { ...env, HTTP_PORT: String(apiPort) }, children);
  const worker = await spawnRole('worker', env, children);
  const pids = { api: api.pid, worker: worker.pid, hub1: hubs[0].pid, hub2: hubs[1].pid, redis: stack.pids.redis, database: stack.pids.mongo };
  const everyone = [...roomsBySize.values()].flat().flatMap((room) => room.people);
  const devices = ctx.platform.db.collection('devices');

  for (const state of STATES) {
    if (state === 'online') {
      const { connected } = await sockets.call({ cmd: 'connect', targets: everyone.map((p, i) => ({ port: hubs[i % 2].port, token: p.token })), concurrency: 50 });
      log(`${connected} of ${everyone.length} members online`);
    } else await sockets.call({ cmd: 'close' });
    await devices.updateMany({ _id: { $in: everyone.map((p) => p.deviceId) } }, { $set: { pushToken: state === 'none' ? null : { token: 'fcm-bench-device', provider: 'FCM', updatedAt: new Date() } } });
    await forgetPushReach(ctx, [...roomsBySize.values()].flat().map((room) => room.roomId));
    // Presence and the device caches settled.
    await sleep(1500);
    for (const size of SIZES) {
      for (const rate of RATES) {
        // 1,000 posts/s into rooms of 50 offline with tokens would be 49,000 pushes a second, each
        // recorded in the database by the local provider: past what one worker and the in-memory
        // database do on two cores (bench:pushes measures pushing itself).
        if (state === 'tokens' && rate * (size - 1) > MAX_PUSHES_PER_SECOND) {
          rows.push([`${rate} posts/s, rooms of ${size}, ${STATE_NAMES[state]}`, `not run: ${rate * (size - 1)} pushes a second, over the ${MAX_PUSHES_PER_SECOND} this bench posts at`]);
          continue;
        }
        log(`${rate} posts/s, rooms of ${size}, ${STATE_NAMES[state]}`);
        const run = await costOf(pids, () => postAndDrain(apiPort, rate, roomsBySize.get(size)));
        const p = run.perPost;
        const service = serviceOver(p, ['api', 'worker', 'hub1', 'hub2']);
        row([
          `${rate} posts/s, rooms of ${size}, ${STATE_NAMES[state]}`,
          `CPU per post: api ${ms(p.api)} ms, worker ${ms(p.worker)} ms, hubs ${ms(p.hub1)} + ${ms(p.hub2)} ms, Redis ${ms(p.redis)} ms, database ${ms(p.database)} ms; service (api + worker + hubs) ${service.toFixed(1)}× the api's; achieved ${Math.round(run.achieved)}/s, p99 ${run.p99.toFixed(1)} ms, failures ${run.failures}${run.drained ? '' : '; the worker had not finished the jobs a minute after the last post'}`,
        ]);
      }
    }
  }
  await sockets.call({ cmd: 'close' });

} finally {
  await stopAll(children, stack, tmp, ctx);
}

/** A context over another stack (`npm start`'s), to seed it. */
async function ctxFor(startEnv) {
  const [{ loadConfig }, { createContext }, { createLogger }] = await Promise.all([import('../dist/src/platform/config.js'), import('../dist/src/composition.js'), import('../dist/src/platform/logger.js')]);
  return createContext(loadConfig({ ...startEnv, NODE_ENV: 'test', LOG_LEVEL: 'warn' }), createLogger({ LOG_LEVEL: 'warn' }, 'bench'));
}

const width = Math.max(...rows.map((r) => r[0].length));
process.stdout.write([`Post cost benchmark, ${os.cpus().length} cores, ${new Date().toISOString()}, ${SECONDS} s per row, ${ROOMS} rooms of each size`, ...rows.map(([a, b]) => `| ${a.padEnd(width)} | ${b} |`), ''].join('\n'));
process.exit(0);
