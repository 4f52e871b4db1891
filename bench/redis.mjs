// `npm run bench:redis`: what the service asks of Redis, for the capacity model (docs/operators/capacity.md).
// Over the bench's own Redis (one server, nothing else using it), read from Redis itself (`INFO
// commandstats`, `INFO cpu`, `used_memory`):
// - commands and Redis CPU per post: posts into rooms of 3 whose members are online (no job), then
//   offline with push tokens (a push job per post, run by a worker process: BullMQ's add, take and
//   finish counted apart from the job's own commands);
// - memory per idle socket (a hub holding them: presence and its bookkeeping), per device inbox and
//   per event kept in one, and per job waiting in a queue.
// SOCKETS, INBOXES, EVENTS_PER_INBOX, JOBS and POSTS size the run.
import path from 'node:path';
import http from 'node:http';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { forgetPushReach, forkWorker, queueDrained, requestJson, seedGroupRoom, spawnHub, spawnRole, startBench, stopAll } from './common.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SOCKETS = Number(process.env.SOCKETS ?? 5000);
const INBOXES = Number(process.env.INBOXES ?? 2000);
const EVENTS_PER_INBOX = Number(process.env.EVENTS_PER_INBOX ?? 10);
const JOBS = Number(process.env.JOBS ?? 5000);
const POSTS = Number(process.env.POSTS ?? 2000);
const ROOMS = 20;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const log = (message) => process.stderr.write(`[bench] ${message}\n`);

const { stack, env, config, ctx, children, tmp, port } = await startBench('redis', { PUSH_PROVIDER: 'local' });
const redis = new Redis(stack.redisUrl);
const rows = [];
const row = (name, value) => {
  rows.push([name, value]);
  log(`${name}: ${value}`);
};

/** Redis's own figures: every command's calls, its CPU (µs), and the memory it holds. */
async function redisNow() {
  const [stats, cpu, memory] = await Promise.all([redis.info('commandstats'), redis.info('cpu'), redis.info('memory')]);
  const calls = new Map();
  for (const match of stats.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) calls.set(match[1], Number(match[2]));
  const number = (text, name) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(text)?.[1] ?? 0);
  return { calls, cpuUs: (number(cpu, 'used_cpu_sys') + number(cpu, 'used_cpu_user')) * 1e6, memory: number(memory, 'used_memory') };
}

/** What changed between two readings, less what this script's own readings (INFO) cost. */
function delta(before, after) {
  const calls = new Map();
  for (const [name, count] of after.calls) {
    const grew = count - (before.calls.get(name) ?? 0) - (name === 'info' ? 3 : 0);
    if (grew > 0) calls.set(name, grew);
  }
  return { calls, total: [...calls.values()].reduce((sum, n) => sum + n, 0), cpuUs: after.cpuUs - before.cpuUs, memory: after.memory - before.memory };
}

/** Memory settled: Redis's lazy frees done and the allocator's figure stable for a moment. */
async function settledMemory() {
  let last = -1;
  for (let i = 0; i < 20; i++) {
    const { memory } = await redisNow();
    if (memory === last) return memory;
    last = memory;
    await sleep(250);
  }
  return last;
}

const top = (calls) => [...calls].sort((a, b) => b[1] - a[1]).slice(0, 8).map(([name, n]) => `${name} ${n}`).join(', ');

/** Posts `count` posts round `rooms` (each by the room's first member), 16 at a time. */
async function post(apiPort, rooms, count) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
  let next = 0, failures = 0;
  await Promise.all(Array.from({ length: 16 }, async () => {
    while (next < count) {
      const room = rooms[next++ % rooms.length];
      const res = await requestJson({ port: apiPort, agent }, 'PUT', `/api/messages/${room.roomId}`, room.people[0].token, { roomId: room.roomId, message: 'What a post asks of Redis' });
      if (res.status !== 200) failures++;
    }
  }));
  agent.destroy();
  return failures;
}

try {
  const sockets = forkWorker(path.join(root, 'bench/client-worker.mjs'), children);
  const hub = await spawnHub(env, children, 'uws');
  await spawnRole('api', { ...env, HTTP_PORT: String(port) }, children);

  // 1. Commands per post, members online (no job), then offline with push tokens (a job each).
  const rooms = [];
  for (let r = 0; r < ROOMS; r++) rooms.push({ roomId: `redis-3-${r}`, people: await seedGroupRoom(ctx, config, `redis-3-${r}`, 3, r * 3) });
  const members = rooms.flatMap((room) => room.people);
  const devices = ctx.platform.db.collection('devices');
  await devices.updateMany({ _id: { $in: members.map((p) => p.deviceId) } }, { $set: { pushToken: { token: 'fcm-bench-device', provider: 'FCM', updatedAt: new Date() } } });
  await sockets.call({ cmd: 'connect', targets: members.map((p) => ({ port: hub.port, token: p.token })), concurrency: 50 });
  // Warm: the rooms' push reach learned by a job each (a worker for the moment), caches filled.
  const warmWorker = await spawnRole('worker', env, children);
  await post(port, rooms, ROOMS * 2);
  await queueDrained(ctx, 'message-push', 30_000);
  warmWorker.kill('SIGTERM');
  await sleep(1500);
  {
    const before = await redisNow();
    const failures = await post(port, rooms, POSTS);
    await sleep(500);
    const d = delta(before, await redisNow());
    row('a post, rooms of 3, members online (no job)', `${(d.total / POSTS).toFixed(2)} commands (${top(d.calls)}; for ${POSTS} posts), Redis CPU ${(d.cpuUs / POSTS).toFixed(1)} µs a post; failures ${failures}`);
  }
  await sockets.call({ cmd: 'close' });
  await forgetPushReach(ctx, rooms.map((room) => room.roomId));
  const worker = await spawnRole('worker', env, children);
  await post(port, rooms, ROOMS * 2);
  await queueDrained(ctx, 'message-push', 30_000);
  await sleep(1500);
  {
    const before = await redisNow();
    const failures = await post(port, rooms, POSTS);
    const drained = await queueDrained(ctx, 'message-push', 60_000);
    await sleep(500);
    const d = delta(before, await redisNow());
    row(
      'a post with its push job, rooms of 3, members offline with push tokens',
      `${(d.total / POSTS).toFixed(1)} commands, the commands BullMQ's scripts run inside Redis counted (${top(d.calls)}; for ${POSTS} posts); Redis CPU ${(d.cpuUs / POSTS).toFixed(1)} µs a post; failures ${failures}${drained ? '' : '; the worker had not finished'}`,
    );
  }
  worker.kill('SIGTERM');

  // 1b. BullMQ alone: a job that does nothing, added, taken and finished with the service's options
  // (its queues' removeOnComplete, its workers' lock and stall check): what a job costs Redis
  // whatever it does (a script's own commands count in INFO commandstats too, so the split above
  // cannot separate them).
  {
    const { Queue, Worker } = await import('bullmq');
    const connections = [new Redis(stack.redisUrl, { maxRetriesPerRequest: null }), new Redis(stack.redisUrl, { maxRetriesPerRequest: null })];
    const queue = new Queue('bench-noop', { connection: connections[0], defaultJobOptions: { attempts: 3, removeOnComplete: 1000, removeOnFail: 1000 } });
    let done = 0;
    const noop = new Worker('bench-noop', async () => void done++, { connection: connections[1], concurrency: 8, lockDuration: config.WORKER_LOCK_MS, stalledInterval: config.WORKER_LOCK_MS });
    await noop.waitUntilReady();
    await sleep(500);
    const before = await redisNow();
    for (let i = 0; i < POSTS; i++) await queue.add('noop', { i });
    while (done < POSTS) await sleep(50);
    await sleep(300);
    const d = delta(before, await redisNow());
    row('a job that does nothing (BullMQ: add, take, finish), added one at a time', `${(d.total / POSTS).toFixed(1)} commands (${top(d.calls)}; for ${POSTS} jobs), Redis CPU ${(d.cpuUs / POSTS).toFixed(1)} µs a job`);
    await noop.close();
    await queue.obliterate({ force: true });
    await queue.close();
    for (const connection of connections) connection.disconnect();
  }

  // 2. Memory per idle socket: a hub holding them (presence, its per-device keys).
  const people = await seedGroupRoom(ctx, config, 'redis-sockets', SOCKETS, 100_000);
  {
    const before = await settledMemory();
    const { connected } = await sockets.call({ cmd: 'connect', targets: people.map((p) => ({ port: hub.port, token: p.token })), concurrency: 100 });
    await sleep(2000);
    const after = await settledMemory();
    row('memory per idle socket', `${((after - before) / connected).toFixed(0)} bytes (${connected} sockets on one hub; used_memory ${(before / 1e6).toFixed(1)} → ${(after / 1e6).toFixed(1)} MB)`);
    await sockets.call({ cmd: 'close' });
  }

  // 3. Memory per device inbox, and per event kept in one (devices offline: events wait in their inboxes).
  {
    const owners = people.slice(0, INBOXES);
    await sleep(2000);
    const before = await settledMemory();
    for (let i = 0; i < EVENTS_PER_INBOX; i++) {
      for (let start = 0; start < owners.length; start += 200) {
        await Promise.all(owners.slice(start, start + 200).map((p) => ctx.events.toUsers([p.userId], 'device.added', { deviceId: `bench-${i}`, name: 'A bench tablet', platform: 'ANDROID' }, { push: false })));
      }
      if (i === 0) {
        const one = await settledMemory();
        row('memory per device inbox holding one event', `${((one - before) / owners.length).toFixed(0)} bytes (${owners.length} inboxes)`);
      }
    }
    const after = await settledMemory();
    row('memory per event kept in an inbox', `${((after - before) / (owners.length * EVENTS_PER_INBOX)).toFixed(0)} bytes (${owners.length} inboxes of ${EVENTS_PER_INBOX} events of ~90 bytes of JSON; used_memory ${(before / 1e6).toFixed(1)} → ${(after / 1e6).toFixed(1)} MB)`);
  }

  // 4. Memory per job waiting in a queue (no worker running).
  {
    const before = await settledMemory();
    const { QUEUES } = await import('../dist/src/platform/queues.js');
    for (let start = 0; start < JOBS; start += 500) await Promise.all(Array.from({ length: Math.min(500, JOBS - start) }, (_, i) => ctx.platform.queues.add(QUEUES.messagePush, { messageId: `bench-job-${start + i}` })));
    const after = await settledMemory();
    row('memory per job waiting in a queue (a message push)', `${((after - before) / JOBS).toFixed(0)} bytes (${JOBS} jobs)`);
  }

  const date = new Date().toISOString();
  console.log(`Redis benchmark, ${date}, Redis ${(await redis.info('server')).match(/redis_version:(\S+)/)?.[1]}, one server`);
  console.log('| measure | result |\n|---|---|');
  for (const [name, value] of rows) console.log(`| ${name} | ${value} |`);
} finally {
  redis.disconnect();
  await stopAll(children, stack, tmp, ctx);
}
