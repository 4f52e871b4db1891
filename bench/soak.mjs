// `npm run bench:soak`: steady mixed traffic against an api, a realtime and a worker process for
// SOAK_SECONDS (300): sign-ins, posts into many small rooms, reads, socket connects and disconnects,
// attachment uploads (thumbnailed by the worker). Prints answers by kind and status, p50/p99 per
// kind, room broadcasts expected and received by the sockets held all along (a lost event shows),
// uploads that never became READY, and each role's resident memory at the start (after a warm-up)
// and the end with its slope (a leak shows as a steady climb). Goal: no 5xx, no lost event, flat memory.
import http from 'node:http';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import { io } from 'socket.io-client';
import { freePort } from '../scripts/stack.mjs';
import { multipart } from '../dist/test/helpers/multipart.js';
import { percentile, rssKb, spawnRole, stopAll, startBench } from './common.mjs';

const SECONDS = Number(process.env.SOAK_SECONDS ?? 300);
const RATE = Number(process.env.SOAK_RATE ?? 40);
const USERS = Number(process.env.SOAK_USERS ?? 90);
const ROOMS = Number(process.env.SOAK_ROOMS ?? 45);
const WARMUP_S = Math.min(30, Math.floor(SECONDS / 5));
const SAMPLE_MS = 5_000;
const log = (message) => process.stderr.write(`[soak] ${message}\n`);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const socketPort = await freePort();
// Phones sign in from addresses of their own, as behind a load balancer (the per-address sign-in limits keep production's values).
const { tmp, stack, env, ctx, children, port } = await startBench('soak', { SOCKET_PORT: String(socketPort), TRUST_PROXY_HOPS: '1' });
env.STORAGE_DIR = path.join(tmp, 'blobs');
env.SMS_OUTBOX_FILE = path.join(tmp, 'sms.jsonl');

const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });

/** One HTTP call; `{status, body, ms}`; a broken connection is status 0. */
function call(method, url, { token, json, raw, from } = {}) {
  return new Promise((resolve) => {
    const started = performance.now();
    const payload = json !== undefined ? Buffer.from(JSON.stringify(json)) : raw?.payload;
    const headers = {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(from ? { 'x-forwarded-for': from } : {}),
      ...(json !== undefined ? { 'content-type': 'application/json' } : raw?.headers ?? {}),
      ...(payload ? { 'content-length': payload.length } : {}),
    };
    const req = http.request({ host: '127.0.0.1', port, method, path: url, agent, headers }, (res) => {
      const chunks = [];
      res.on('data', (chunk) => chunks.push(chunk));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let body = text;
        try {
          body = text ? JSON.parse(text) : null;
        } catch {
          // not JSON
        }
        resolve({ status: res.statusCode, body, ms: performance.now() - started });
      });
    });
    req.on('error', () => resolve({ status: 0, body: null, ms: performance.now() - started }));
    req.end(payload);
  });
}

// What was asked, by kind: latencies and statuses.
const stats = new Map();
function record(kind, status, ms) {
  let entry = stats.get(kind);
  if (!entry) stats.set(kind, (entry = { ms: [], statuses: new Map() }));
  entry.ms.push(ms);
  entry.statuses.set(status, (entry.statuses.get(status) ?? 0) + 1);
}

// Valid German mobile numbers, a new one each time (a stride through 90 million).
let phoneNumber = Math.floor(Math.random() * 90_000_000);
const phone = () => `+49151${10_000_000 + ((phoneNumber += 7_919) % 90_000_000)}`;

function codeFor(number) {
  // Complete lines only: another sign-in's text may be half-written.
  const text = readFileSync(env.SMS_OUTBOX_FILE, 'utf8');
  const lines = text.slice(0, text.lastIndexOf('\n')).split('\n').filter(Boolean);
  for (let i = lines.length - 1; i >= 0; i--) {
    const line = JSON.parse(lines[i]);
    if (line.to === number) return line.code;
  }
  throw new Error(`no code for ${number}`);
}

/** A sign-in as a phone does it (code, then login); the session, or null. */
async function signIn(kind = 'sign-in') {
  const number = phone();
  const from = `10.${Math.floor(Math.random() * 256)}.${Math.floor(Math.random() * 256)}.${1 + Math.floor(Math.random() * 254)}`;
  const sent = await call('POST', '/api/auth/code', { json: { phone: number }, from });
  if (sent.status !== 204) {
    record(kind, sent.status, sent.ms);
    return null;
  }
  const login = await call('POST', '/api/auth/login', { json: { phone: number, code: codeFor(number), device: { name: 'Soak phone', platform: 'ANDROID' } }, from });
  record(kind, login.status, sent.ms + login.ms);
  return login.status === 200 ? login.body : null;
}

/** Swaps the session's refresh token for new tokens, once at a time per session (refresh tokens rotate). */
function refresh(session) {
  session.refreshing ??= (async () => {
    const res = await call('POST', '/api/auth/refresh', { json: { refreshToken: session.refreshToken } });
    record('refresh', res.status, res.ms);
    if (res.status === 200) Object.assign(session, res.body);
  })().finally(() => (session.refreshing = null));
  return session.refreshing;
}

/** A call as the session's phone makes it: when the access token has expired, refresh and ask again. */
async function authed(session, method, url, options = {}) {
  const token = session.accessToken;
  const res = await call(method, url, { ...options, token });
  if (res.status !== 401 || res.body?.code !== 'TOKEN_EXPIRED') return res;
  if (session.accessToken === token) await refresh(session);
  else await session.refreshing;
  const again = await call(method, url, { ...options, token: session.accessToken });
  return { ...again, ms: res.ms + again.ms };
}

const started = performance.now();
const [api, hub, worker] = await Promise.all([spawnRole('api', env, children), spawnRole('realtime', env, children), spawnRole('worker', env, children)]);
const roles = { api, realtime: hub, worker };
log(`roles up in ${((performance.now() - started) / 1000).toFixed(1)} s; seeding ${USERS} users in ${ROOMS} rooms`);

// Users, each in two or three small rooms; every user holds a socket for the whole run.
const users = [];
while (users.length < USERS) {
  const made = await Promise.all(Array.from({ length: Math.min(8, USERS - users.length) }, () => signIn('seed sign-in')));
  users.push(...made.filter(Boolean));
}
const rooms = [];
for (let r = 0; r < ROOMS; r++) {
  const members = [users[(2 * r) % USERS], users[(2 * r + 1) % USERS], users[(2 * r + 7) % USERS]];
  const res = await call('POST', '/api/rooms', { token: members[0].accessToken, json: { type: 'PRIVATE_GROUP', name: `Soak ${r}`, memberIds: members.slice(1).map((m) => m.userId) } });
  if (res.status !== 200) throw new Error(`room creation answered ${res.status}: ${JSON.stringify(res.body)}`);
  // The members are not the creator's connections: each accepts the invitation.
  for (const member of members.slice(1)) {
    const accepted = await call('POST', `/api/rooms/${res.body.id}/invitation?accept=true`, { token: member.accessToken });
    if (accepted.status !== 200) throw new Error(`accepting answered ${accepted.status}: ${JSON.stringify(accepted.body)}`);
  }
  rooms.push({ id: res.body.id, members });
}
stats.clear();

function connect(session) {
  const socket = io(`http://127.0.0.1:${socketPort}`, { path: '/socket.io/', transports: ['websocket'], auth: { token: session.accessToken, lastSeq: 0 }, reconnection: true, forceNew: true });
  return socket;
}
// Room broadcasts each held socket got, by message id; disconnects of held sockets.
const heard = new Map();
let heldDisconnects = 0;
const held = await Promise.all(
  users.map(
    (session) =>
      new Promise((resolve, reject) => {
        const socket = connect(session);
        const mine = new Set();
        heard.set(session.userId, mine);
        socket.on('message.new', (event) => mine.add(event.messageId));
        socket.on('disconnect', () => heldDisconnects++);
        socket.once('connect', () => resolve(socket));
        socket.once('connect_error', reject);
      }),
  ),
);

const picture = await sharp({ create: { width: 640, height: 480, channels: 3, background: { r: 40, g: 120, b: 200 } } }).png().toBuffer();
const expected = new Map();
const uploads = [];
let posted = 0;

const kinds = [
  { kind: 'post', weight: 60, run: post },
  { kind: 'read', weight: 20, run: read },
  { kind: 'socket', weight: 10, run: churnSocket },
  { kind: 'upload', weight: 5, run: upload },
  { kind: 'sign-in', weight: 5, run: () => signIn() },
];
const totalWeight = kinds.reduce((sum, k) => sum + k.weight, 0);
const pick = () => {
  let at = Math.random() * totalWeight;
  for (const k of kinds) if ((at -= k.weight) < 0) return k;
  return kinds[0];
};
const anyRoom = () => rooms[Math.floor(Math.random() * rooms.length)];

async function post() {
  const room = anyRoom();
  const author = room.members[Math.floor(Math.random() * room.members.length)];
  const res = await authed(author, 'PUT', `/api/messages/${room.id}`, { json: { roomId: room.id, message: `soak ${posted++} ${'words '.repeat(Math.floor(Math.random() * 30))}`, clientMessageId: crypto.randomUUID() } });
  record('post', res.status, res.ms);
  if (res.status === 200) expected.set(res.body, room.members.map((m) => m.userId));
}

async function read() {
  const room = anyRoom();
  const res = await authed(room.members[0], 'GET', `/api/messages/${room.id}?pageSize=20`);
  record('read', res.status, res.ms);
}

async function upload() {
  const room = anyRoom();
  const body = multipart([{ filename: 'photo.png', content: picture, contentType: 'image/png' }]);
  const res = await authed(room.members[0], 'POST', `/api/messages/${room.id}/attachments`, { raw: body });
  record('upload', res.status, res.ms);
  if (res.status === 204) uploads.push(room.id);
}

async function churnSocket() {
  const session = users[Math.floor(Math.random() * users.length)];
  const t0 = performance.now();
  const attempt = () => {
    const socket = connect(session);
    return new Promise((resolve) => {
      socket.once('connect', () => resolve({ socket, ok: true }));
      socket.once('connect_error', (error) => resolve({ socket, ok: false, message: error.message }));
      setTimeout(() => resolve({ socket, ok: false }), 10_000);
    });
  };
  let { socket, ok, message } = await attempt();
  if (!ok && message === 'UNAUTHORIZED') {
    // Most likely the access token expired: refresh it, as the phone would, and connect again.
    socket.close();
    await refresh(session);
    ({ socket, ok } = await attempt());
  }
  record('socket', ok ? 'connected' : 'refused', performance.now() - t0);
  await sleep(1_000 + Math.random() * 4_000);
  socket.disconnect();
}

log(`load: ${RATE} operations/s for ${SECONDS} s (post 60 %, read 20 %, socket connect/disconnect 10 %, upload 5 %, sign-in 5 %); ${held.length} sockets held all along`);
const loadStarted = performance.now();
// Resident memory of each role every SAMPLE_MS.
const samples = { api: [], realtime: [], worker: [] };
const sampler = setInterval(() => {
  const at = (performance.now() - loadStarted) / 1000;
  for (const [name, child] of Object.entries(roles)) samples[name].push([at, rssKb(child.pid)]);
}, SAMPLE_MS);
let inFlight = 0;
let skipped = 0;
await new Promise((resolve) => {
  const tick = setInterval(() => {
    if (performance.now() - loadStarted >= SECONDS * 1000) {
      clearInterval(tick);
      resolve();
      return;
    }
    if (inFlight >= 64) {
      skipped++;
      return;
    }
    inFlight++;
    void pick()
      .run()
      .finally(() => inFlight--);
  }, 1000 / RATE);
});
while (inFlight > 0) await sleep(50);
clearInterval(sampler);

// What the held sockets should have heard, after the broadcasts drain.
await sleep(3_000);
let want = 0;
let lost = 0;
for (const [messageId, members] of expected) {
  for (const userId of members) {
    want++;
    if (!heard.get(userId).has(messageId)) lost++;
  }
}
const ready = await ctx.platform.db.collection('attachments').countDocuments({ status: 'READY' });
const notReady = await ctx.platform.db.collection('attachments').countDocuments({ status: { $ne: 'READY' } });

function slopeKbPerMin(points) {
  const use = points.filter(([at]) => at >= WARMUP_S);
  const n = use.length;
  if (n < 2) return NaN;
  const mx = use.reduce((s, [x]) => s + x, 0) / n;
  const my = use.reduce((s, [, y]) => s + y, 0) / n;
  const num = use.reduce((s, [x, y]) => s + (x - mx) * (y - my), 0);
  const den = use.reduce((s, [x]) => s + (x - mx) ** 2, 0);
  return (num / den) * 60;
}

console.log(`\nsoak: ${SECONDS} s at ${RATE} operations/s (${skipped} ticks skipped at 64 in flight)`);
console.log('kind       answers                               p50 ms   p99 ms');
let fivexx = 0;
for (const [kind, entry] of stats) {
  const sorted = entry.ms.sort((a, b) => a - b);
  const statuses = [...entry.statuses].map(([status, count]) => `${status}: ${count}`).join(', ');
  for (const [status, count] of entry.statuses) if (Number(status) >= 500 || status === 0) fivexx += count;
  console.log(`${kind.padEnd(10)} ${statuses.padEnd(37)} ${percentile(sorted, 50).toFixed(1).padStart(7)} ${percentile(sorted, 99).toFixed(1).padStart(8)}`);
}
console.log(`5xx or broken connections: ${fivexx}`);
console.log(`room broadcasts to held sockets: ${want} expected, ${want - lost} received, ${lost} lost; held sockets disconnected ${heldDisconnects} times`);
console.log(`uploads: ${uploads.length} accepted, ${ready} READY, ${notReady} not READY`);
console.log(`memory (after ${WARMUP_S} s warm-up)   start MB   end MB   slope KB/min`);
for (const [name, points] of Object.entries(samples)) {
  const use = points.filter(([at]) => at >= WARMUP_S);
  const first = use[0]?.[1] ?? NaN;
  const last = use.at(-1)?.[1] ?? NaN;
  console.log(`${name.padEnd(30)} ${(first / 1024).toFixed(1).padStart(8)} ${(last / 1024).toFixed(1).padStart(8)} ${slopeKbPerMin(points).toFixed(0).padStart(14)}`);
}

const minutes = Array.from({ length: Math.floor(SECONDS / 60) + 1 }, (_, m) => m * 60);
console.log(`memory by minute (MB)${' '.repeat(10)}${minutes.map((at) => `${at / 60}`.padStart(7)).join('')}`);
for (const [name, points] of Object.entries(samples)) {
  const at = (second) => points.reduce((best, point) => (Math.abs(point[0] - second) < Math.abs(best[0] - second) ? point : best), points[0]);
  console.log(`${name.padEnd(31)}${minutes.map((second) => (at(second)[1] / 1024).toFixed(1).padStart(7)).join('')}`);
}

for (const socket of held) socket.disconnect();
agent.destroy();
await stopAll(children, stack, tmp, ctx);
process.exit(fivexx === 0 && lost === 0 ? 0 : 1);
