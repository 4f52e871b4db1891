// `npm run bench:pushes`: the pushes of one post to a room of MEMBERS (10,000) whose devices are 90%
// offline with push tokens and 10% connected, with 1 worker process and then 2 (WORKER_COUNTS): the
// time from the post to the last push handed to the provider, pushes per second, and pushes per
// worker CPU-second. The provider is the FCM adapter itself (OAuth token, one HTTP request per push)
// against an FCM-protocol server this script runs; PROVIDER=local uses the local provider instead,
// which records each push in MongoDB (there mongo-java-server's inserts are what is measured).
import { generateKeyPairSync } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import { cpuMs, forkWorker, insertGroupRoom, machineCpuMs, seedMembers, spawnHub, spawnRole, startBench, stopAll } from './common.mjs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../scripts/stack.mjs';
import { Queue } from 'bullmq';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const MEMBERS = Number(process.env.MEMBERS ?? 10_000);
const WORKER_COUNTS = (process.env.WORKER_COUNTS ?? '1,2').split(',').map(Number);
const ROOM = 'push-room';
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const log = (message) => process.stderr.write(`[bench] ${message}\n`);

const PROVIDER = process.env.PROVIDER ?? 'fcm';
/** Pushes the FCM-protocol server took, by message id. */
const received = new Map();
const fcm = http.createServer((req, res) => {
  let text = '';
  req.on('data', (chunk) => (text += chunk));
  req.on('end', () => {
    res.setHeader('content-type', 'application/json');
    if (req.url === '/token') return res.end(JSON.stringify({ access_token: 'bench-access-token', expires_in: 3600, token_type: 'Bearer' }));
    const messageId = JSON.parse(text).message?.data?.messageId;
    received.set(messageId, (received.get(messageId) ?? 0) + 1);
    res.end(JSON.stringify({ name: 'projects/bench/messages/1' }));
  });
});
fcm.keepAliveTimeout = 60_000;
const fcmPort = await freePort();
await new Promise((resolve) => fcm.listen(fcmPort, '127.0.0.1', resolve));
const providerEnv = {};
if (PROVIDER === 'fcm') {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const accountFile = path.join(process.env.TMPDIR ?? '/tmp', `bench-fcm-${process.pid}.json`);
  writeFileSync(accountFile, JSON.stringify({ project_id: 'bench', client_email: 'bench@bench.iam.gserviceaccount.com', private_key: privateKey.export({ type: 'pkcs8', format: 'pem' }), token_uri: `http://127.0.0.1:${fcmPort}/token` }));
  Object.assign(providerEnv, { PUSH_PROVIDER: 'remote', FCM_SERVICE_ACCOUNT_FILE: accountFile, FCM_API_BASE: `http://127.0.0.1:${fcmPort}` });
}

// 10,000 members with their devices, lists, memberships and the pushes' state fill most of the
// in-memory database's default 512 MB: its stop-the-world collections then outlast the driver's
// monitor (1.5 s here) and the seeding fails on a "server monitor timeout" (2 runs of 3 once).
process.env.MONGO_JAVA_HEAP ??= '1g';
const { tmp, stack, env, ctx, config, children } = await startBench('push', providerEnv);
const rows = [];
try {
  log(`seeding a room of ${MEMBERS}`);
  const people = await seedMembers(ctx, config, MEMBERS, ROOM);
  const db = ctx.platform.db;
  const at = new Date();
  await db.collection('room_members').updateMany({ roomId: ROOM }, { $set: { enabled: true, muted: false, publishEnabled: null, removedByAdmin: false } });
  await insertGroupRoom(db, ROOM, people[0].userId, MEMBERS, at);
  const onlineCount = Math.round(MEMBERS * 0.1);
  const offline = people.slice(onlineCount);
  await db.collection('devices').updateMany({ _id: { $in: offline.map((p) => p.deviceId) } }, { $set: { pushToken: { token: 'fcm-bench-device', provider: 'FCM', updatedAt: at } } });

  const hub = await spawnHub(env, children, 'uws');
  const apiPort = await freePort();
  await spawnRole('api', { ...env, HTTP_PORT: String(apiPort) }, children);
  const sockets = forkWorker(path.join(root, 'bench/client-worker.mjs'), children);
  const held = (await sockets.call({ cmd: 'connect', targets: people.slice(0, onlineCount).map((p) => ({ port: hub.port, token: p.token })), concurrency: 50 })).connected;
  log(`${held} sockets live, ${offline.length} devices offline with tokens`);
  const poster = people[0].token;

  for (const count of WORKER_COUNTS) {
    const workers = await Promise.all(Array.from({ length: count }, () => spawnRole('worker', env, children)));
    await sleep(1_000);
    const cpu0 = workers.map((worker) => cpuMs(worker.pid));
    const machine0 = machineCpuMs();
    const own0 = process.cpuUsage();
    const p0 = performance.now();
    const response = await fetch(`http://127.0.0.1:${apiPort}/api/messages/${ROOM}`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${poster}`, 'content-type': 'application/json' },
      // A group this large notifies its members of mentions only by default (issue 57): the creator's
      // post mentions the room, as an announcement to everyone does, so every offline member is pushed.
      body: JSON.stringify({ roomId: ROOM, message: `Push me (${count} workers)`, mentionsRoom: true }),
    });
    const answered = performance.now() - p0;
    if (response.status !== 200) throw new Error(`post answered ${response.status}`);
    const messageId = await response.json();
    // A count the busy in-memory server does not answer in time is asked again.
    const pushed = async () => (PROVIDER === 'fcm' ? (received.get(messageId) ?? 0) : db.collection('push_records').countDocuments({ 'message.data.messageId': messageId }).catch(() => done));
    let done = 0;
    // Each count reads the whole collection in the in-memory server: a few times a second, not more.
    while ((done = await pushed()) < offline.length && performance.now() - p0 < 180_000) await sleep(PROVIDER === 'fcm' ? 10 : 250);
    const seconds = (performance.now() - p0) / 1000;
    const cpuSeconds = workers.reduce((sum, worker, i) => sum + (cpuMs(worker.pid) - cpu0[i]) / 1000, 0);
    const perWorker = workers.map((worker, i) => `${((cpuMs(worker.pid) - cpu0[i]) / 1000).toFixed(1)} s`).join(' + ');
    // How busy the machine was: when its cores are full, another worker has no core to run on.
    const machine = machineCpuMs();
    const busy = (100 * (machine.busy - machine0.busy)) / (machine.all - machine0.all);
    const own = process.cpuUsage(own0);
    const providerSeconds = (own.user + own.system) / 1e6;
    rows.push([
      `push of one post to a room of ${MEMBERS} (${offline.length} offline with tokens, ${held} live), ${count} worker${count === 1 ? '' : 's'}, ${PROVIDER === 'fcm' ? 'FCM adapter over HTTP' : 'local provider (MongoDB)'}`,
      `${done} pushes handed to the provider in ${seconds.toFixed(1)} s (${Math.round(done / seconds)}/s); worker CPU ${perWorker}: ${Math.round(done / cpuSeconds)} pushes per worker CPU-second; the post answered in ${answered.toFixed(1)} ms; the machine's ${os.availableParallelism()} cores ${busy.toFixed(0)}% busy (this script, the provider's server, ${providerSeconds.toFixed(1)} CPU-s)`,
    ]);
    log(rows.at(-1).join(': '));
    // Where the post's jobs stand (a part still waiting or failed shows here).
    const queue = new Queue('message-push', { connection: ctx.platform.redis, prefix: ctx.platform.queues.prefixOf('message-push') });
    log(`message-push jobs: ${JSON.stringify(await queue.getJobCounts())}`);
    for (const job of await queue.getJobs(['failed', 'active', 'waiting', 'delayed'])) log(`  ${job.id}: ${job.failedReason ?? (await job.getState())}`);
    await queue.obliterate({ force: true });
    await queue.close();
    for (const worker of workers) {
      worker.kill('SIGTERM');
      await new Promise((resolve) => worker.once('exit', resolve));
    }
  }
  await sockets.call({ cmd: 'close' });
  sockets.kill();
} finally {
  await stopAll(children, stack, tmp, ctx);
  fcm.close();
}

console.log('\n| measure | result |\n|---|---|');
for (const [measure, result] of rows) console.log(`| ${measure} | ${result} |`);
