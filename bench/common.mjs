// Helpers the benchmark scripts share: process CPU and memory from /proc, percentiles, and an IPC
// client for forked load-generator processes.
import { fork, spawn } from 'node:child_process';
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { onRuntime } from '../scripts/runtime.mjs';
import { freePort, onShutdownSignal, stackEnv, startStack } from '../scripts/stack.mjs';

const mainJs = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../dist/main.js');

const CLOCK_TICKS = 100;

/** CPU time (user + system) a process has used so far, in milliseconds. */
export function cpuMs(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
}

/**
 * CPU less the upkeep measured in a quiet window, or null when that upkeep is half the CPU or more:
 * then the figure is mostly the subtraction (a hub's memory-saver collections make its upkeep large
 * and irregular after a connection storm), and a ratio of two such figures says nothing.
 */
export function netOfUpkeep(cpu, upkeep) {
  return upkeep < cpu / 2 ? cpu - upkeep : null;
}

/** The whole machine's CPU time so far (every core), busy and in all, in milliseconds (/proc/stat). */
export function machineCpuMs() {
  const [user, nice, system, idle, iowait, irq, softirq, steal] = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  const all = user + nice + system + idle + iowait + irq + softirq + steal;
  return { busy: ((all - idle - iowait) * 1000) / CLOCK_TICKS, all: (all * 1000) / CLOCK_TICKS };
}

export function rssKb(pid) {
  return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]);
}

/** One HTTP call with a bearer token and an optional JSON body to a local port; `{status, body}` (the body as text). */
export function requestJson({ port, agent }, method, url, token, body) {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const headers = { authorization: `Bearer ${token}`, ...(payload === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }) };
    const req = http.request({ host: '127.0.0.1', port, method, path: url, agent, headers }, (res) => {
      const chunks = [];
      res.on('data', (chunk) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.end(payload);
  });
}

/** The sum of a list of numbers. */
export const sum = (list) => list.reduce((total, value) => total + value, 0);

/** The p-th percentile of an ascending array. */
export function percentile(sorted, p) {
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

/** Forks a worker script and returns `call(message)` resolving with its answer; `children` collects it for clean-up. */
export function forkWorker(script, children) {
  const child = fork(script, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  children.push(child);
  let next = 0;
  const pending = new Map();
  child.on('message', (message) => {
    pending.get(message.id)?.(message);
    pending.delete(message.id);
  });
  return {
    pid: child.pid,
    call(message) {
      const id = next++;
      return new Promise((resolve) => {
        pending.set(id, resolve);
        child.send({ ...message, id });
      });
    },
    kill: () => child.kill(),
  };
}

/**
 * Runs `node dist/main.js --role=<role>` and resolves with the child once it says every role is up
 * (the banner main.ts prints to stdout whatever the log level). Logs go at the level `env` gives: the
 * benchmarks run at `warn`, so per-request log lines do not weigh on what they measure.
 */
export async function spawnRole(role, env, children, nodeArgs = []) {
  // BENCH_CPU_PROF_DIR: each role writes a V8 CPU profile there when it exits (see bench/cpu-profile-summary.mjs).
  const profile = process.env.BENCH_CPU_PROF_DIR ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF_DIR}`, `--cpu-prof-name=${role}-${Date.now()}.cpuprofile`] : [];
  const child = spawn(process.execPath, [...profile, ...nodeArgs, mainJs, `--role=${role}`], { env, stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  await new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (chunk) => {
      out += chunk;
      if (out.includes('Chat platform running')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`${role} exited ${code}`)));
  });
  child.stdout.resume();
  return child;
}

/**
 * A hub node (`--role=realtime`) on free ports with the bench's environment. Memory experiments:
 * `BENCH_HUB_NODE_OPTIONS` (NODE_OPTIONS for the hubs alone) and `BENCH_HUB_NODE_ARGS` (flags on the
 * hubs' command line, which also takes the V8 flags NODE_OPTIONS refuses).
 */
export async function spawnHub(env, children, engine) {
  const [port, opsPort] = [await freePort(), await freePort()];
  const hubOptions = process.env.BENCH_HUB_NODE_OPTIONS ? { NODE_OPTIONS: process.env.BENCH_HUB_NODE_OPTIONS } : {};
  const nodeArgs = (process.env.BENCH_HUB_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const child = await spawnRole('realtime', { ...env, ...hubOptions, SOCKET_PORT: String(port), SOCKET_ENGINE: engine, OPS_PORT: String(opsPort) }, children, nodeArgs);
  return { port, opsPort, pid: child.pid, child };
}

export async function stopHub(hub) {
  hub.child.kill('SIGTERM');
  await new Promise((resolve) => hub.child.once('exit', resolve));
}

/**
 * Stops every process the run started (SIGTERM, then SIGKILL), then (given the run's context) drops its database and closes
 * it, stops the stack and removes the run's folder.
 */
export async function stopAll(children, stack, folder, ctx) {
  // SIGTERM first (a role finishes and writes its CPU profile, when asked for), SIGKILL after 5 s.
  await Promise.all(
    children.map(async (child) => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    }),
  );
  if (ctx) {
    await ctx.platform.db.dropDatabase().catch(() => undefined);
    await ctx.close();
  }
  await stack.stop();
  rmSync(folder, { recursive: true, force: true });
}

/** Ctrl-C or SIGTERM: stop every process the run started, then the stack, and remove its folder. */
export function stopAllOnSignal(children, stack, folder) {
  onShutdownSignal(async () => {
    await stopAll(children, stack, folder);
    process.exit(130);
  });
}

/**
 * What a bench starts with: a throw-away stack in a temporary folder, the roles' environment (a
 * database and Redis prefix of the run's own, a free HTTP port, `extraEnv` on top), a context over
 * it, and the list of children that stopAll and Ctrl-C stop. The built service is imported here,
 * on first use, so a bench that needs none (bench:startup) does not need dist/.
 */
export async function startBench(name, extraEnv = {}) {
  // Benches run on the project's Node 24 whatever Node npm started them with (scripts/runtime.mjs).
  await onRuntime(path.resolve(path.dirname(mainJs), '..'), process.argv[1]);
  const [{ loadConfig }, { createContext }, { createLogger }] = await Promise.all([
    import('../dist/src/platform/config.js'),
    import('../dist/src/composition.js'),
    import('../dist/src/platform/logger.js'),
  ]);
  const tmp = mkdtempSync(path.join(os.tmpdir(), `chat-bench-${name}-`));
  const stack = await startStack({ dataDir: tmp, persistent: false });
  const id = randomUUID().slice(0, 8);
  const port = await freePort();
  const env = {
    ...process.env,
    ...stackEnv(stack),
    MONGODB_DB: `bench${name}_${id}`,
    REDIS_PREFIX: `bench${name}:${id}:`,
    JWT_SECRET: `bench-${randomUUID()}`,
    LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'warn',
    NODE_ENV: 'test',
    HTTP_PORT: String(port),
    ...extraEnv,
  };
  const config = loadConfig(env);
  const ctx = await createContext(config, createLogger({ LOG_LEVEL: 'warn' }, 'bench'));
  const children = [];
  stopAllOnSignal(children, stack, tmp);
  return { tmp, stack, env, config, ctx, children, port };
}

/**
 * `count` members of `room` (or of `room(i)` for member i), each with one device and an access token,
 * written straight to the database (the realtime benches measure the hub, not sign-in).
 */
/**
 * Stores the devices of new users written straight to the database (fast for thousands), with each
 * user's `user_devices` list, as DevicesRepo.insert keeps it: the list is how the service finds a
 * user's devices. One insert of the lists, not an upsert each: thousands of upserts at once kept
 * mongo-java-server from answering its monitor in one run, which failed the seeding.
 */
export async function insertDevices(db, devices) {
  const byUser = Map.groupBy(devices, (device) => device.userId);
  await db.collection('user_devices').insertMany([...byUser].map(([userId, owned]) => ({ _id: userId, deviceIds: owned.map((device) => device._id) })), { ordered: false });
  await db.collection('devices').insertMany(devices, { ordered: false });
}

/** A private group's room document, as the service stores one, for members seeded straight into the database. */
export function insertGroupRoom(db, roomId, creatorId, memberCount, at = new Date()) {
  return db.collection('rooms').insertOne({ _id: roomId, type: 'PRIVATE_GROUP', name: roomId, description: null, link: null, nameWords: [roomId], creatorId, admins: [], commentsEnabled: false, participantPublishEnabled: true, visible: false, uniqueKey: roomId, memberCount, createdAt: at, updatedAt: at });
}

/**
 * A private group of `count` members (users `u<offset + i>`, each with one device `d<offset + i>`
 * and an access token), enabled and unmuted as a join makes them, written straight to the database:
 * the benches measure posting and fan-out, not sign-in and joins.
 */
export async function seedGroupRoom(ctx, config, roomId, count, offset) {
  const { TokenService } = await import('../dist/src/auth/tokens.js');
  const tokens = new TokenService(config.JWT_SECRET, 6 * 3600, 300);
  const at = new Date();
  const people = [];
  for (let start = 0; start < count; start += 5000) {
    const users = [], devices = [], members = [], userRooms = [];
    for (let i = start; i < Math.min(count, start + 5000); i++) {
      const userId = `u${offset + i}`, deviceId = `d${offset + i}`;
      users.push({ _id: userId, phone: `+1888${String(offset + i).padStart(7, '0')}`, displayName: null, language: 'en', twoFactor: { enabled: false, secret: null, pendingSecret: null, lastStep: 0 }, createdAt: at, updatedAt: at });
      devices.push({ _id: deviceId, userId, name: 'bench', platform: 'OTHER', createdAt: at, lastSeenAt: at, revokedAt: null, refreshTokenHash: randomUUID(), refreshExpiresAt: at, spentRefreshHashes: [], pushToken: null, voipPushToken: null });
      members.push({ _id: `${roomId}:${userId}`, roomId, userId, active: true, enabled: true, muted: false, publishEnabled: null, removedByAdmin: false, joinedAt: at });
      userRooms.push({ _id: userId, roomIds: [roomId] });
      people.push({ userId, deviceId });
    }
    await Promise.all([
      ctx.platform.db.collection('users').insertMany(users),
      insertDevices(ctx.platform.db, devices),
      ctx.platform.db.collection('room_members').insertMany(members),
      ctx.platform.db.collection('user_rooms').insertMany(userRooms),
    ]);
  }
  await insertGroupRoom(ctx.platform.db, roomId, people[0].userId, count, at);
  for (const p of people) p.token = await tokens.signAccess({ userId: p.userId, deviceId: p.deviceId });
  return people;
}

/** Documents per insert while seeding: mongo-java-server answers nothing else on that thread meanwhile. */
const SEED_CHUNK = 1000;

export async function seedMembers(ctx, config, count, room) {
  const roomOf = typeof room === 'function' ? room : () => room;
  const { TokenService } = await import('../dist/src/auth/tokens.js');
  const tokens = new TokenService(config.JWT_SECRET, 6 * 3600, 300);
  const now = new Date();
  const result = [];
  // One insert of a thousand at a time: inserts of 5,000 four at once kept the in-memory database from
  // answering the driver's monitor for 1.5 s in some runs (its network threads run the commands), and
  // the driver then failed the insert in progress.
  for (let start = 0; start < count; start += SEED_CHUNK) {
    const users = [];
    const devices = [];
    const members = [];
    const rooms = [];
    for (let i = start; i < Math.min(count, start + SEED_CHUNK); i++) {
      const userId = `bench-user-${i}`;
      const deviceId = `bench-device-${i}`;
      users.push({ _id: userId, phone: `+1999${String(i).padStart(7, '0')}`, displayName: `User ${i}`, language: 'en', twoFactor: { enabled: false, secret: null, pendingSecret: null, lastStep: 0 }, createdAt: now, updatedAt: now });
      devices.push({ _id: deviceId, userId, name: 'bench', platform: 'OTHER', createdAt: now, lastSeenAt: now, revokedAt: null, refreshTokenHash: randomUUID(), refreshExpiresAt: now, spentRefreshHashes: [], pushToken: null, voipPushToken: null });
      members.push({ _id: `${roomOf(i)}:${userId}`, roomId: roomOf(i), userId, active: true, joinedAt: now });
      rooms.push({ _id: userId, roomIds: [roomOf(i)] });
      result.push({ userId, deviceId, room: roomOf(i) });
    }
    await ctx.platform.db.collection('users').insertMany(users, { ordered: false });
    await insertDevices(ctx.platform.db, devices);
    await ctx.platform.db.collection('room_members').insertMany(members, { ordered: false });
    await ctx.platform.db.collection('user_rooms').insertMany(rooms, { ordered: false });
  }
  for (const entry of result) entry.token = await tokens.signAccess({ userId: entry.userId, deviceId: entry.deviceId });
  return result;
}

/**
 * Waits until the worker has taken and finished every job of `queue` (none waiting, delayed or
 * active), or `limitMs` went by; resolves with whether it drained.
 */
export async function queueDrained(ctx, queue, limitMs) {
  const { Queue } = await import('bullmq');
  const jobs = new Queue(queue, { connection: ctx.platform.redis, prefix: ctx.platform.queues.prefixOf(queue) });
  const until = performance.now() + limitMs;
  try {
    for (;;) {
      const counts = await jobs.getJobCounts('waiting', 'delayed', 'active', 'prioritized', 'waiting-children');
      if (Object.values(counts).every((count) => count === 0)) return true;
      if (performance.now() > until) return false;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  } finally {
    await jobs.close();
  }
}

/**
 * After push tokens were written straight to the database (behind the service's back): the rooms'
 * push reach forgotten, as setting a token through the api does, so their next posts' jobs learn it.
 */
export async function forgetPushReach(ctx, roomIds) {
  const { PushReachStore } = await import('../dist/src/push/push-reach.js');
  await new PushReachStore(ctx.platform.redis, ctx.platform.keys.push).forget(roomIds);
}
