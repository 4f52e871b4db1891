// `npm run bench:chat-status`: the chat status snapshot of a member of 1,000 rooms (ROOMS), each with
// a few messages posted through the messages service (so the counters are the real ones) and a room
// call in progress in some; times GET /api/rooms/status over HTTP against a real api process: the
// first page of 100, every page of the list in turn, and the whole list in pages of 500.
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import path from 'node:path';
import { TokenService } from '../dist/src/auth/tokens.js';
import { insertDevices, percentile, spawnRole, stopAll, startBench } from './common.mjs';

const ROOMS = Number(process.env.ROOMS ?? 1_000);
const MESSAGES_PER_ROOM = Number(process.env.MESSAGES_PER_ROOM ?? 3);
const CALLS = Number(process.env.CALLS ?? 20);
const RUNS = Number(process.env.RUNS ?? 50);
const log = (message) => process.stderr.write(`[bench] ${message}\n`);

const { tmp, stack, env, config, ctx, children, port } = await startBench('status');
env.STORAGE_DIR = path.join(tmp, 'blobs');

/** The reader and one other member in each of ROOMS rooms, written straight to the database. */
async function seed() {
  const db = ctx.platform.db;
  const at = new Date(Date.now() - 3600_000);
  const reader = { userId: 'reader', deviceId: 'reader-device' };
  const writer = { userId: 'writer', deviceId: 'writer-device' };
  const users = [reader, writer].map(({ userId }, i) => ({ _id: userId, phone: `+1888000000${i}`, displayName: userId, language: 'en', twoFactor: { enabled: false, secret: null, pendingSecret: null, lastStep: 0 }, createdAt: at, updatedAt: at }));
  const rooms = [], members = [], roomIds = [];
  for (let i = 0; i < ROOMS; i++) {
    const roomId = randomUUID();
    roomIds.push(roomId);
    const createdAt = new Date(at.getTime() + i);
    rooms.push({ _id: roomId, type: 'PRIVATE_GROUP', name: `Room ${i}`, description: null, link: null, nameWords: ['room', String(i)], creatorId: reader.userId, admins: [], commentsEnabled: false, participantPublishEnabled: true, visible: false, uniqueKey: roomId, memberCount: 2, createdAt, updatedAt: createdAt });
    for (const { userId } of [reader, writer]) members.push({ _id: `${roomId}:${userId}`, roomId, userId, active: true, enabled: true, muted: i % 7 === 0, publishEnabled: null, removedByAdmin: false, joinedAt: createdAt });
  }
  await Promise.all([
    db.collection('users').insertMany(users),
    insertDevices(db, [{ _id: reader.deviceId, userId: reader.userId, name: 'bench', platform: 'OTHER', createdAt: at, lastSeenAt: at, revokedAt: null, refreshTokenHash: randomUUID(), refreshExpiresAt: at, spentRefreshHashes: [], pushToken: null, voipPushToken: null }]),
    db.collection('rooms').insertMany(rooms),
    db.collection('room_members').insertMany(members),
    db.collection('user_rooms').insertMany([reader, writer].map(({ userId }) => ({ _id: userId, roomIds }))),
  ]);
  // Messages through the service: the timeline counters, newest messages and the author's read marks are the real ones.
  const started = performance.now();
  let next = 0;
  const posts = [];
  for (let i = 0; i < ROOMS * MESSAGES_PER_ROOM; i++) posts.push([roomIds[i % ROOMS], i]);
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < posts.length) {
        const [roomId, n] = posts[next++];
        await ctx.services.messages.post(writer, roomId, { roomId, message: `message ${n} ${'lorem ipsum '.repeat(n % 40)}` });
      }
    }),
  );
  log(`posted ${posts.length} messages in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  // Calls in progress in some rooms, as the room-calls service leaves them.
  const calls = roomIds.slice(0, CALLS).map((roomId) => ({ _id: randomUUID(), roomId, startedBy: writer.userId, startedByDeviceId: writer.deviceId, media: 'AUDIO', state: 'ACTIVE', sfuNodeId: 'bench', participants: [], participantCount: 1, joinedUserIds: [writer.userId], declinedBy: [], endReason: null, createdAt: at, ringUntil: at, endedAt: null }));
  if (calls.length > 0) {
    await db.collection('room_calls').insertMany(calls);
    await db.collection('room_call_locks').insertMany(calls.map((call) => ({ _id: call.roomId, callId: call._id })));
  }
  const tokens = new TokenService(config.JWT_SECRET, 6 * 3600, 300);
  return tokens.signAccess(reader);
}

function get(url, token) {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const req = http.request({ host: '127.0.0.1', port, method: 'GET', path: url, headers: { authorization: `Bearer ${token}` } }, (res) => {
      const chunks = [];
      res.on('data', (chunk) => chunks.push(chunk));
      res.on('end', () => {
        if (res.statusCode !== 200) return reject(new Error(`${url} answered ${res.statusCode}`));
        resolve({ ms: performance.now() - started, body: JSON.parse(Buffer.concat(chunks).toString('utf8')), bytes: Buffer.concat(chunks).length });
      });
    });
    req.on('error', reject);
    req.end();
  });
}

function summary(name, samples) {
  const sorted = [...samples].sort((a, b) => a - b);
  return `${name}: p50 ${percentile(sorted, 50).toFixed(1)} ms, p95 ${percentile(sorted, 95).toFixed(1)} ms, p99 ${percentile(sorted, 99).toFixed(1)} ms (${samples.length} runs)`;
}

try {
  const token = await seed();
  await spawnRole('api', env, children);
  const first = await get('/api/rooms/status?pageSize=100', token);
  const unread = first.body.items.reduce((sum, item) => sum + item.unreadCount, 0);
  if (first.body.totalItems !== ROOMS) throw new Error(`expected ${ROOMS} rooms, the snapshot has ${first.body.totalItems}`);
  log(`first page: ${first.body.items.length} of ${first.body.totalItems} rooms, ${first.bytes} bytes, ${unread} unread, ${first.body.items.filter((item) => item.call).length} calls`);
  for (let i = 0; i < 5; i++) await get('/api/rooms/status?pageSize=100', token);

  const firstPage = [];
  for (let i = 0; i < RUNS; i++) firstPage.push((await get('/api/rooms/status?pageSize=100', token)).ms);
  const wholeList = [];
  for (let i = 0; i < Math.ceil(RUNS / 5); i++) {
    let total = 0;
    for (let pageNo = 0; pageNo < Math.ceil(ROOMS / 100); pageNo++) total += (await get(`/api/rooms/status?pageSize=100&currentPage=${pageNo}`, token)).ms;
    wholeList.push(total);
  }
  const big = [];
  for (let i = 0; i < Math.ceil(RUNS / 5); i++) {
    let total = 0;
    let calls = 0;
    for (let pageNo = 0; pageNo < Math.ceil(ROOMS / 500); pageNo++) {
      const answer = await get(`/api/rooms/status?pageSize=500&currentPage=${pageNo}`, token);
      total += answer.ms;
      calls += answer.body.items.filter((item) => item.call).length;
    }
    if (calls !== CALLS) throw new Error(`expected ${CALLS} calls in progress in the list, found ${calls}`);
    big.push(total);
  }
  console.log(`chat status of a member of ${ROOMS} rooms (${MESSAGES_PER_ROOM} messages each, ${CALLS} calls in progress), one api process, mongo-java-server (memory):`);
  console.log(`  ${summary('first page of 100', firstPage)}`);
  console.log(`  ${summary(`whole list in ${Math.ceil(ROOMS / 100)} pages of 100`, wholeList)}`);
  console.log(`  ${summary(`whole list in ${Math.ceil(ROOMS / 500)} pages of 500`, big)}`);
} finally {
  await stopAll(children, stack, tmp, ctx);
}
