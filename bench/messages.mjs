// `npm run bench:messages`: a message posted through REST to a room of 10,000 member sockets over 2
// hub nodes (time from the POST to every receipt); posting throughput and p99 against a trivial
// route of the same api process in the same run, and p99 at a fixed 1,000 posts per second;
// pushes of one post to that room with 90% of its devices offline (the post's job and its parts, one worker);
// the worker runs from the posting phases on, so their figures include the push job each post starts;
// thumbnails per second and MP4 conversion speed against real time, with the worker's own code.
import { execFile, fork } from 'node:child_process';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Queue } from 'bullmq';
import sharp from 'sharp';
import { convertToMp4, durationSeconds, thumbnail } from '../dist/src/attachments/media.service.js';
import { freePort } from '../scripts/stack.mjs';
import { cpuMs, forgetPushReach, forkWorker, percentile, queueDrained, seedGroupRoom, spawnRole, startBench, stopAll, sum } from './common.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const MEMBERS = Number(process.env.MEMBERS ?? 10_000);
const WAVES = Number(process.env.WAVES ?? 10);
const LOAD_SECONDS = Number(process.env.LOAD_SECONDS ?? 8);
const CONCURRENCY = Number(process.env.CONCURRENCY ?? 32);
// Fixed-rate phase: 500 posts/s from each of the two generators.
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const log = (message) => process.stderr.write(`[bench] ${message}\n`);
const now = () => performance.timeOrigin + performance.now();
const pct = percentile;

const { tmp, stack, env, config, ctx, children } = await startBench('msg');
env.STORAGE_DIR = path.join(tmp, 'blobs');

function spawnClient() {
  return forkWorker(path.join(root, 'bench/client-worker.mjs'), children);
}

function request(port, method, url, token, body) {
  return new Promise((resolve, reject) => {
    const payload = body ? JSON.stringify(body) : undefined;
    const req = http.request({ host: '127.0.0.1', port, method, path: url, headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(payload ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } : {}) } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode));
    });
    req.on('error', reject);
    req.end(payload);
  });
}

/** A post's answer: the new message's id. */
async function postFor(port, token, roomId, message, extra = {}) {
  const response = await fetch(`http://127.0.0.1:${port}/api/messages/${roomId}`, { method: 'PUT', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ roomId, message, ...extra }) });
  if (response.status !== 200) throw new Error(`post answered ${response.status}`);
  return response.json();
}

/** Two load-generator processes, each taking half the load; CPU of the api and of the generators. */
async function load(apiPid, message) {
  const workers = [0, 1].map(() => {
    const child = fork(path.join(root, 'bench/http-worker.mjs'), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    children.push(child);
    return child;
  });
  const api0 = cpuMs(apiPid);
  const gen0 = workers.map((w) => cpuMs(w.pid));
  const stack0 = stackCpuMs();
  const hubs0 = hubPids.map((pid) => cpuMs(pid));
  const worker0 = cpuMs(workerPid);
  const started = performance.now();
  const results = await Promise.all(
    workers.map((w, i) => new Promise((resolve) => {
      w.once('message', resolve);
      w.send({ id: i, ...message(i) });
    })),
  );
  const seconds = (performance.now() - started) / 1000;
  const stack1 = stackCpuMs();
  const cpu = {
    api: (cpuMs(apiPid) - api0) / 10 / seconds,
    generators: workers.map((w, i) => (cpuMs(w.pid) - gen0[i]) / 10 / seconds),
    mongo: (stack1.mongo - stack0.mongo) / 10 / seconds,
    redis: (stack1.redis - stack0.redis) / 10 / seconds,
    hubs: hubPids.map((pid, i) => (cpuMs(pid) - hubs0[i]) / 10 / seconds),
    worker: (cpuMs(workerPid) - worker0) / 10 / seconds,
  };
  workers.forEach((w) => w.kill());
  const times = results.flatMap((r) => r.times).sort((a, b) => a - b);
  return { count: times.length, seconds, p50: pct(times, 50), p99: pct(times, 99), failures: results.reduce((sum, r) => sum + r.failures, 0), cpu };
}
const cpuNote = (cpu) =>
  `api CPU ${cpu.api.toFixed(0)}%; worker ${cpu.worker.toFixed(0)}%; hubs ${cpu.hubs.map((c) => `${c.toFixed(0)}%`).join(' + ')}; database ${cpu.mongo.toFixed(0)}%; Redis ${cpu.redis.toFixed(0)}%; load generators ${cpu.generators.map((c) => `${c.toFixed(0)}%`).join(' + ')}`;
/** CPU of the database and Redis, when this script started them (not with MONGODB_URL and REDIS_URL given). */
function stackCpuMs() {
  return { mongo: stack.pids ? cpuMs(stack.pids.mongo) : NaN, redis: stack.pids ? cpuMs(stack.pids.redis) : NaN };
}

const rows = [];
const hubPids = [];
let workerPid;
try {
  log(`seeding a room of ${MEMBERS}`);
  const people = await seedGroupRoom(ctx, config, 'bench-room', MEMBERS, 0);
  const posters = await seedGroupRoom(ctx, config, 'post-room', 2, MEMBERS);
  const hubPorts = [await freePort(), await freePort()];
  hubPids.push(...(await Promise.all(hubPorts.map((port) => spawnRole('realtime', { ...env, SOCKET_PORT: String(port) }, children)))).map((hub) => hub.pid));
  const apiPort = await freePort();
  const apiPid = (await spawnRole('api', { ...env, HTTP_PORT: String(apiPort) }, children)).pid;

  // 1. REST post → every member socket.
  const clients = [spawnClient(), spawnClient()];
  const targets = people.map((p, i) => ({ port: hubPorts[i % 2], token: p.token }));
  const half = Math.ceil(targets.length / 2);
  const connected = (await Promise.all(clients.map((c, i) => c.call({ cmd: 'connect', targets: targets.slice(i * half, (i + 1) * half), concurrency: 50 })))).reduce((s, r) => s + r.connected, 0);
  log(`${connected} sockets connected`);
  await sleep(1000);
  const poster = people[0].token;
  // Where the fan-out's CPU goes: the hubs' against the load generators' (the same two cores).
  const fanOutCpu0 = { hubs: hubPids.map((pid) => cpuMs(pid)), generators: clients.map((c) => cpuMs(c.pid)) };
  for (let wave = 0; wave < WAVES; wave++) {
    const status = await request(apiPort, 'PUT', '/api/messages/bench-room', poster, { roomId: 'bench-room', message: `sent:${now()}` });
    if (status !== 200) throw new Error(`post answered ${status}`);
    await sleep(1000);
  }
  await sleep(1000);
  const fanOutCpu = { hubs: sum(hubPids.map((pid, i) => cpuMs(pid) - fanOutCpu0.hubs[i])), generators: sum(clients.map((c, i) => cpuMs(c.pid) - fanOutCpu0.generators[i])) };
  const latencies = (await Promise.all(clients.map((c) => c.call({ cmd: 'latencies' })))).flatMap((r) => r.latencies).sort((a, b) => a - b);
  rows.push([
    `REST post to a room of ${MEMBERS} over 2 hub nodes`,
    `p50 ${pct(latencies, 50).toFixed(1)} ms, p99 ${pct(latencies, 99).toFixed(1)} ms, max ${latencies.at(-1).toFixed(1)} ms; delivered ${latencies.length}/${connected * WAVES} (${((100 * latencies.length) / (connected * WAVES)).toFixed(2)}%); CPU per post: hubs ${(fanOutCpu.hubs / WAVES).toFixed(0)} ms, load generators ${(fanOutCpu.generators / WAVES).toFixed(0)} ms (two cores)`,
  ]);
  log(rows.at(-1).join(' | '));
  await Promise.all(clients.map((c) => c.call({ cmd: 'close' })));
  clients.forEach((c) => c.kill());
  await sleep(1500);

  // The worker from here on: every post's push job is part of what posting costs. The first phase's
  // ten jobs (a room of 10,000 without push tokens: 100 parts reading 10,000 members' devices) are
  // dropped, not run: they would only weigh on the posting figures.
  const leftover = new Queue('message-push', { connection: ctx.platform.redis, prefix: ctx.platform.queues.prefixOf('message-push') });
  await leftover.obliterate({ force: true });
  await leftover.close();
  workerPid = (await spawnRole('worker', env, children)).pid;

  // 2. Posting against a trivial route of the same api process, the worker running.
  const split = (extra) => (i) => ({ cmd: 'closed', seconds: LOAD_SECONDS, target: { port: apiPort, concurrency: CONCURRENCY / 2, ...extra(i) } });
  const trivial = await load(apiPid, split(() => ({ method: 'GET', path: '/healthz' })));
  const posting = await load(apiPid, split((i) => ({ method: 'PUT', path: '/api/messages/post-room', token: posters[i].token, body: { roomId: 'post-room', message: 'load' } })));
  const trivialRps = trivial.count / trivial.seconds;
  const postRps = posting.count / posting.seconds;
  rows.push([`trivial route GET /healthz, ${CONCURRENCY} in flight`, `${Math.round(trivialRps)} req/s, p50 ${trivial.p50.toFixed(1)} ms, p99 ${trivial.p99.toFixed(1)} ms; ${cpuNote(trivial.cpu)}`]);
  rows.push([`PUT /api/messages, ${CONCURRENCY} in flight`, `${Math.round(postRps)} posts/s, p50 ${posting.p50.toFixed(1)} ms, p99 ${posting.p99.toFixed(1)} ms, failures ${posting.failures}; ${(postRps / trivialRps).toFixed(2)}× the trivial route; ${cpuNote(posting.cpu)}`]);
  const steady = await load(apiPid, (i) => ({ cmd: 'fixed', perSecond: 500, seconds: LOAD_SECONDS, target: { port: apiPort, concurrency: 256, method: 'PUT', path: '/api/messages/post-room', token: posters[i].token, body: { roomId: 'post-room', message: 'steady' } } }));
  rows.push(['PUT /api/messages at a fixed 1,000 posts/s', `achieved ${Math.round(steady.count / steady.seconds)}/s, p50 ${steady.p50.toFixed(1)} ms, p99 ${steady.p99.toFixed(1)} ms, failures ${steady.failures}; ${cpuNote(steady.cpu)}`]);

  // 3. Pushes of one post to the room of MEMBERS, most of them offline with push tokens, from the
  // post's one worker job (the local provider stands for APNs and FCM: it records each push).
  // The posting phases' jobs done first, so this post's job is the worker's only work.
  if (!(await queueDrained(ctx, 'message-push', 120_000))) log('the posting phases\' push jobs were still queued after 2 minutes');
  const onlineCount = Math.round(MEMBERS * 0.1);
  const offline = people.slice(onlineCount);
  await ctx.platform.db.collection('devices').updateMany({ _id: { $in: offline.map((p) => p.deviceId) } }, { $set: { pushToken: { token: 'fcm-bench-device', provider: 'FCM', updatedAt: new Date() } } });
  await forgetPushReach(ctx, ['bench-room']);
  const pushClient = spawnClient();
  const held = (await pushClient.call({ cmd: 'connect', targets: people.slice(0, onlineCount).map((p, i) => ({ port: hubPorts[i % 2], token: p.token })), concurrency: 50 })).connected;
  const p0 = performance.now();
  // A group this large notifies its members of mentions only by default (issue 57): the creator's post
  // mentions the room, as an announcement to everyone does, so every offline member is pushed.
  const posted = await postFor(apiPort, poster, 'bench-room', 'Push me', { mentionsRoom: true });
  const answered = performance.now() - p0;
  const pushes = () => ctx.platform.db.collection('push_records').countDocuments({ 'message.data.messageId': posted });
  while ((await pushes()) < offline.length && performance.now() - p0 < 120_000) await sleep(100);
  const pushSeconds = (performance.now() - p0) / 1000;
  const sentPushes = await pushes();
  rows.push([
    `push of one post to a room of ${MEMBERS}: ${offline.length} offline devices with tokens, ${held} sockets live`,
    `${sentPushes} pushes handed to the provider in ${pushSeconds.toFixed(1)} s (${Math.round(sentPushes / pushSeconds)}/s) from the post's job and its parts, 1 worker; the post answered in ${answered.toFixed(1)} ms`,
  ]);
  await pushClient.call({ cmd: 'close' });
  pushClient.kill();

  // 4. Media, with the worker's own functions.
  const images = [];
  for (let i = 0; i < 60; i++) {
    const file = path.join(tmp, `photo-${i}.jpg`);
    await sharp({ create: { width: 1600, height: 1200, channels: 3, background: { r: i * 4, g: 120, b: 200 } } }).jpeg({ quality: 85 }).toFile(file);
    images.push(file);
  }
  const t0 = performance.now();
  let next = 0;
  await Promise.all([0, 1].map(async () => { while (next < images.length) { const i = next++; await thumbnail(images[i], path.join(tmp, `thumb-${i}.webp`)); } }));
  const thumbSeconds = (performance.now() - t0) / 1000;
  rows.push(['thumbnails (1600×1200 JPEG → 320 px WebP), 2 at a time', `${(images.length / thumbSeconds).toFixed(1)} per second`]);
  const clip = path.join(tmp, 'clip.avi');
  await promisify(execFile)('ffmpeg', ['-nostdin', '-y', '-loglevel', 'error', '-f', 'lavfi', '-i', 'testsrc2=duration=20:size=1280x720:rate=30', '-f', 'lavfi', '-i', 'sine=frequency=300:duration=20', '-c:v', 'mpeg4', '-q:v', '4', '-c:a', 'libmp3lame', clip]);
  const duration = await durationSeconds(clip);
  const c0 = performance.now();
  await convertToMp4(clip, path.join(tmp, 'clip.mp4'), duration);
  const convertSeconds = (performance.now() - c0) / 1000;
  rows.push([`MP4 conversion (H.264/AAC) of a ${duration.toFixed(0)} s 720p clip`, `${convertSeconds.toFixed(1)} s: ${(duration / convertSeconds).toFixed(2)}× real time`]);
} finally {
  await stopAll(children, stack, tmp, ctx);
}
const width = Math.max(...rows.map((r) => r[0].length));
process.stdout.write([`Messages benchmark, ${os.cpus().length} cores, ${new Date().toISOString()}`, ...rows.map(([a, b]) => `| ${a.padEnd(width)} | ${b} |`), ''].join('\n'));
process.exit(0);
