import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { Workers } from '../../workers/main.js';
import { signIn, startTestApp, startTestWorkers, type Session, type TestApp } from '../helpers/app.js';
import { httpAs, makeRoom, postMessage } from '../helpers/factories.js';
import { DeviceClient, spawnHub, type HubProcess } from '../helpers/hubs.js';
import { until } from '../helpers/wait.js';
import { pushPreview } from '../../src/push/message-push.service.js';
import { mayNeedPush, PushReachStore, REACH_MAX_DEVICES } from '../../src/push/push-reach.js';

/** Members with an offline Android device each, written straight to the database (fast for thousands). */
async function seedOfflineMembers(t: TestApp, roomId: string, count: number): Promise<void> {
  const at = new Date();
  const run = randomUUID().slice(0, 8);
  const people = Array.from({ length: count }, (_, i) => ({ userId: `push-${run}-${i}`, deviceId: `push-device-${run}-${i}` }));
  await Promise.all([
    t.db.collection('devices').insertMany(
      people.map(({ userId, deviceId }) => ({ _id: deviceId as never, userId, name: 'seeded', platform: 'ANDROID', createdAt: at, lastSeenAt: at, revokedAt: null, refreshTokenHash: randomUUID(), refreshExpiresAt: at, spentRefreshHashes: [], pushToken: { token: `fcm-big-${deviceId}`, provider: 'FCM', updatedAt: at }, voipPushToken: null })),
    ),
    t.db.collection('room_members').insertMany(people.map(({ userId }) => ({ _id: `${roomId}:${userId}` as never, roomId, userId, active: true, enabled: true, muted: false, publishEnabled: null, removedByAdmin: false, joinedAt: at }))),
    t.db.collection('user_rooms').insertMany(people.map(({ userId }) => ({ _id: userId as never, roomIds: [roomId] }))),
    // As DevicesRepo.insert lists each device under its user: how the service finds a user's devices.
    t.db.collection('user_devices').insertMany(people.map(({ userId, deviceId }) => ({ _id: userId as never, deviceIds: [deviceId] }))),
  ]);
}

/** What the post's message-push job and each of its parts answered (BullMQ keeps a job's hash under <prefix>:<queue>:<jobId>). */
async function jobOutcomes(t: TestApp, messageId: string, parts: number): Promise<{ post: unknown; parts: unknown[] }> {
  const prefix = `${t.ctx.platform.queues.prefixOf('message-push')}:message-push:message-${messageId}`;
  const outcome = async (jobId: string) => {
    const job = await t.ctx.platform.redis.hgetall(jobId);
    assert.ok(job.finishedOn, `${jobId} finished`);
    return JSON.parse(job.returnvalue ?? '{}') as unknown;
  };
  return { post: await outcome(prefix), parts: await Promise.all(Array.from({ length: parts }, (_, i) => outcome(`${prefix}-part-${i}`))) };
}

interface Recorded {
  token: string;
  message: { alert?: { title: string; body: string }; data: Record<string, string>; collapseId?: string; badge?: number; mutableContent?: boolean };
}

/** New messages pushed to members who are not connected (issue 23), through the local push provider. */
describe('pushes for new messages', () => {
  let t: TestApp;
  let workers: Workers;
  let hub: HubProcess;
  const clients: DeviceClient[] = [];
  const api = httpAs(() => t);

  before(async () => {
    t = await startTestApp();
    workers = await startTestWorkers(t);
    hub = await spawnHub(t.config);
  });
  after(async () => {
    for (const c of clients) c.close();
    await hub?.kill('SIGKILL');
    await workers?.close();
    await t?.close();
  });

  const tokenOf = (s: Session) => `fcm-message-${s.deviceId}`;
  const withToken = async (s: Session) => {
    assert.equal((await api(s, 'PUT', '/api/devices/push-token', { token: tokenOf(s), provider: 'FCM' })).statusCode, 204);
    return s;
  };
  const pushesTo = async (s: Session, messageId?: string) =>
    (await t.db.collection('push_records').find({ token: tokenOf(s), ...(messageId ? { 'message.data.messageId': messageId } : {}) }).toArray()) as unknown as Recorded[];
  const pushed = async (s: Session, messageId: string) => {
    await until(async () => (await pushesTo(s, messageId)).length > 0, `the push of ${messageId}`, 10_000);
    return pushesTo(s, messageId);
  };

  it('an offline member is pushed once with the unread total; the author, connected, muted and blocking members are not', async () => {
    const [owner, offline, online, muted, blocker] = await Promise.all(Array.from({ length: 5 }, () => signIn(t).then(withToken)));
    await api(owner!, 'PATCH', '/api/users/me', { displayName: 'Olga' });
    const room = await makeRoom(t, owner!, { name: 'Hikers', members: [offline!, online!, muted!, blocker!] });
    const other = await makeRoom(t, owner!, { name: 'Other room', members: [offline!] });
    assert.equal((await api(muted!, 'POST', `/api/rooms/${room.id}/muted?muted=true`)).statusCode, 200);
    assert.equal((await api(blocker!, 'POST', `/api/users/blocks?blockedUserId=${owner!.userId}`)).statusCode, 200);
    const socket = new DeviceClient(online!.accessToken);
    clients.push(socket);
    await socket.connect(hub.port);

    // One unread message waits in the other room: the badge counts every room.
    const earlier = await postMessage(t, owner!, other.id, 'first');
    assert.equal((await pushed(offline!, earlier))[0]!.message.badge, 1);
    const messageId = await postMessage(t, owner!, room.id, '  Lunch\n\nat   noon?\u0007 ');
    const [push, ...more] = await pushed(offline!, messageId);
    assert.equal(more.length, 0, 'pushed once');
    assert.deepEqual(push!.message.alert, { title: 'Hikers', body: 'Olga: Lunch at noon?' });
    assert.equal(push!.message.badge, 2);
    assert.equal(push!.message.collapseId, room.id);
    assert.deepEqual(push!.message.data, { event: 'message.new', roomId: room.id, messageId, roomName: 'Hikers' });
    for (const nobody of [owner!, online!, muted!, blocker!]) assert.equal((await pushesTo(nobody, messageId)).length, 0);
  });

  it('an end-to-end encrypted room\'s push carries no text, and lets the phone decrypt (mutable-content)', async () => {
    const [owner, member] = await Promise.all([signIn(t), signIn(t).then(withToken)]);
    const room = await makeRoom(t, owner, { type: 'E2EE', name: 'Secret plans', members: [member] });
    const ciphertext = randomBytes(48).toString('base64');
    const messageId = await postMessage(t, owner, room.id, ciphertext);
    const [push] = await pushed(member, messageId);
    assert.deepEqual(push!.message.data, { event: 'message.new', roomId: room.id, messageId });
    assert.equal(push!.message.mutableContent, true);
    assert.ok(!JSON.stringify(push!.message).includes(ciphertext) && !JSON.stringify(push!.message).includes('Secret plans'));
  });

  it('50 posts in a room collapse on one key; a comment goes to the commented message\'s author only', async () => {
    const [owner, a, b] = await Promise.all([signIn(t), signIn(t).then(withToken), signIn(t).then(withToken)]);
    const room = await makeRoom(t, owner, { type: 'PUBLIC_GROUP', members: [a, b] });
    const ids: string[] = [];
    for (let i = 0; i < 50; i++) ids.push(await postMessage(t, owner, room.id, `news ${i}`));
    await until(async () => (await pushesTo(a)).length >= 50, 'fifty pushes', 20_000);
    const pushes = await pushesTo(a);
    assert.equal(pushes.length, 50);
    assert.deepEqual([...new Set(pushes.map((p) => p.message.collapseId))], [room.id]);

    assert.equal((await api(owner, 'POST', `/api/rooms/${room.id}?name=${encodeURIComponent(room.name!)}&description=&commentsEnabled=true&participantPublishEnabled=true`)).statusCode, 200);
    const mine = await postMessage(t, a, room.id, 'my post');
    const comment = await api(owner, 'POST', `/api/messages/${mine}/comments`, { message: 'nice one' });
    assert.equal(comment.statusCode, 200, comment.body);
    const [toAuthor] = await pushed(a, comment.json().id);
    assert.equal(toAuthor!.message.data.messageId, comment.json().id);
    // b got the post of a, not the comment on it (the post's push is recorded first: wait for it, then look).
    await pushed(b, mine);
    assert.equal((await pushesTo(b, comment.json().id)).length, 0);
  });

  it('a room of 2,000 offline members: the post\'s job queues two parts of 1,000, each pushing to its members once', async () => {
    const owner = await signIn(t);
    const room = await makeRoom(t, owner, { name: 'Big room' });
    await seedOfflineMembers(t, room.id, 2_000);
    const messageId = await postMessage(t, owner, room.id, 'Hello, everyone');
    await until(async () => (await t.db.collection('push_records').countDocuments({ 'message.data.messageId': messageId })) >= 2_000, '2,000 pushes', 60_000);
    assert.equal(await t.db.collection('push_records').countDocuments({ 'message.data.messageId': messageId }), 2_000);
    assert.equal((await t.db.collection('push_records').distinct('token', { 'message.data.messageId': messageId })).length, 2_000, 'each device once');
    const outcomes = await jobOutcomes(t, messageId, 2);
    assert.deepEqual(outcomes.post, { recipients: 2_000, devices: 0, online: 0, sent: 0, invalid: 0, failed: 0, alreadySent: 0, parts: 2 });
    assert.deepEqual(outcomes.parts, [0, 1].map(() => ({ recipients: 1_000, devices: 1_000, online: 0, sent: 1_000, invalid: 0, failed: 0, alreadySent: 0, parts: 0 })));
  });

  it('a post with nobody to push starts no job; a member who goes offline, sets a token or unmutes is pushed the next post', async () => {
    const [owner, online, tokenless, muted] = await Promise.all([signIn(t), signIn(t).then(withToken), signIn(t), signIn(t).then(withToken)]);
    const room = await makeRoom(t, owner, { name: 'Reach', members: [online, tokenless, muted] });
    assert.equal((await api(muted, 'POST', `/api/rooms/${room.id}/muted?muted=true`)).statusCode, 200);
    const socket = new DeviceClient(online.accessToken);
    clients.push(socket);
    await socket.connect(hub.port);
    const jobKey = (messageId: string) => `${t.ctx.platform.queues.prefixOf('message-push')}:message-push:message-${messageId}`;
    const jobOf = async (messageId: string) => t.ctx.platform.redis.hgetall(jobKey(messageId));

    // The first post's job learns who the room's posts could reach: the online member's device alone.
    const first = await postMessage(t, owner, room.id, 'first');
    await until(async () => Boolean((await jobOf(first)).finishedOn), 'the first post\'s job', 10_000);
    assert.deepEqual(await t.ctx.platform.redis.get(t.ctx.platform.keys.push.reach(room.id)).then((text) => JSON.parse(text!)), { devices: [[online.deviceId, online.userId]] });
    // Everyone who could be pushed got it live: no job at all (added before the answer, so none will come).
    const second = await postMessage(t, owner, room.id, 'second');
    assert.equal(await t.ctx.platform.redis.exists(jobKey(second)), 0, 'no job for a post nobody could be pushed');

    // A token set: the next post reaches its device.
    await withToken(tokenless);
    const third = await postMessage(t, owner, room.id, 'third');
    assert.equal((await pushed(tokenless, third)).length, 1);
    // Unmuted: the next post reaches them too.
    assert.equal((await api(muted, 'POST', `/api/rooms/${room.id}/muted?muted=false`)).statusCode, 200);
    const fourth = await postMessage(t, owner, room.id, 'fourth');
    assert.equal((await pushed(muted, fourth)).length, 1);
    // The online member's socket gone: the next post reaches them by push.
    socket.close();
    await until(async () => (await t.ctx.services.presenceStore.onlineAmong([online.deviceId])).size === 0, 'the member offline', 10_000);
    const fifth = await postMessage(t, owner, room.id, 'fifth');
    assert.equal((await pushed(online, fifth)).length, 1);
    for (const id of [first, second, third, fourth]) assert.equal((await pushesTo(online, id)).length, 0, 'nothing pushed while online');
  });

  it('a job that read the room before a change does not keep what it read (the change\'s version wins)', async () => {
    const reach = new PushReachStore(t.ctx.platform.redis, t.ctx.platform.keys.push);
    const roomId = `reach-${randomUUID()}`;
    const before = await reach.version(roomId);
    await reach.store(roomId, before, [['device-a', 'user-a']]);
    assert.deepEqual(await reach.of(roomId), { devices: [['device-a', 'user-a']] });
    // A job reads the version; a member sets a token meanwhile (the reach forgotten); the job's store is refused.
    const read = await reach.version(roomId);
    await reach.forget([roomId]);
    await reach.store(roomId, read, []);
    assert.equal(await reach.of(roomId), null);
    // More devices than a post checks: known, but every post gets its job.
    await reach.store(roomId, await reach.version(roomId), Array.from({ length: REACH_MAX_DEVICES + 1 }, (_, i): [string, string] => [`device-${i}`, `user-${i}`]));
    assert.deepEqual(await reach.of(roomId), { devices: null });
    assert.equal(await mayNeedPush(reach, async () => new Set(), roomId, 'user-0'), true);
  });

  it('typing: relayed to the room\'s other members on other sockets, once per interval, never from a non-member', async () => {
    const [a, b, outsider] = await Promise.all([signIn(t), signIn(t), signIn(t)]);
    const room = await makeRoom(t, a, { members: [b] });
    const [onA, onB, onOutsider] = [new DeviceClient(a.accessToken), new DeviceClient(b.accessToken), new DeviceClient(outsider.accessToken)];
    clients.push(onA, onB, onOutsider);
    for (const c of [onA, onB, onOutsider]) await c.connect(hub.port);
    const heard: [string, unknown][] = [];
    onB.socket!.on('typing.start', (payload) => heard.push(['typing.start', payload]));
    onB.socket!.on('typing.stop', (payload) => heard.push(['typing.stop', payload]));
    const mine: unknown[] = [];
    onA.socket!.on('typing.start', (payload) => mine.push(payload));

    onOutsider.socket!.emit('typing.start', { roomId: room.id });
    // The hub handles one socket's events in order: once the ping is answered, the outsider's notice was handled (and would have been relayed first).
    await new Promise((resolve) => onOutsider.socket!.emit('hub.ping', 1, resolve));
    onA.socket!.emit('typing.start', { roomId: room.id });
    onA.socket!.emit('typing.start', { roomId: room.id });
    onA.socket!.emit('typing.start', { roomId: 'x'.repeat(100) });
    onA.socket!.emit('typing.stop', { roomId: room.id });
    // One socket's events reach another in order: once the stop is heard, everything before it was.
    await until(() => heard.some(([event]) => event === 'typing.stop'), 'typing.stop');
    assert.deepEqual(heard, [
      ['typing.start', { roomId: room.id, userId: a.userId }],
      ['typing.stop', { roomId: room.id, userId: a.userId }],
    ]);
    assert.deepEqual(mine, [], 'not echoed to the typist');
  });

  it('a preview is cleaned and at most 100 characters', () => {
    assert.equal(pushPreview('a\u0000b\u200bc   d\n\ne'), 'a b c d e');
    assert.equal(pushPreview('x'.repeat(100)), 'x'.repeat(100));
    assert.equal(pushPreview('x'.repeat(101)), `${'x'.repeat(99)}…`);
  });
});

/** The providers throttle (issue 44): the local provider made to refuse past a quota, as FCM and APNs do. */
describe('pushes for a large room against a throttling provider', () => {
  let t: TestApp;
  let workers: Workers;

  before(async () => {
    // A quota of 40 pushes a second, and parts of 30 members: 100 members make 4 parts.
    t = await startTestApp({ PUSH_LOCAL_RATE: '40', PUSH_PART_MEMBERS: '30' });
    workers = await startTestWorkers(t);
  });
  after(async () => {
    await workers?.close();
    await t?.close();
  });

  it('every member pushed once, no faster than the quota: refused pushes wait as told and go again, delivered ones never', async () => {
    const owner = await signIn(t);
    const room = await makeRoom(t, owner, { name: 'Throttled room' });
    await seedOfflineMembers(t, room.id, 100);
    const messageId = await postMessage(t, owner, room.id, 'Hello, crowd');
    await until(async () => (await t.db.collection('push_records').countDocuments({ 'message.data.messageId': messageId })) >= 100, '100 pushes', 30_000);
    const recorded = await t.db.collection('push_records').find({ 'message.data.messageId': messageId }).project({ token: 1, at: 1 }).toArray();
    assert.equal(recorded.length, 100);
    assert.equal(new Set(recorded.map((record) => record.token as string)).size, 100, 'each device once');
    // 100 at 40 a second need three of the quota's windows (whole seconds of the clock).
    const seconds = new Set(recorded.map((record) => Math.floor((record.at as Date).getTime() / 1000)));
    assert.ok(seconds.size >= 3, `all pushed in ${seconds.size} seconds: faster than the quota`);
    const outcomes = await jobOutcomes(t, messageId, 4);
    assert.deepEqual(outcomes.post, { recipients: 100, devices: 0, online: 0, sent: 0, invalid: 0, failed: 0, alreadySent: 0, parts: 4 });
    const parts = outcomes.parts as { recipients: number; sent: number; failed: number }[];
    assert.deepEqual(parts.map((part) => part.recipients), [30, 30, 30, 10]);
    assert.equal(parts.reduce((sum, part) => sum + part.sent, 0), 100);
    assert.equal(parts.reduce((sum, part) => sum + part.failed, 0), 0);

    // A part's job run again (as after a failure midway) pushes to nobody it reached: none here.
    const memberIds = (await t.db.collection('room_members').find({ roomId: room.id, userId: { $ne: owner.userId } }).project({ userId: 1 }).toArray()).map((row) => row.userId as string).slice(0, 30);
    const again = await t.ctx.services.messagePush.fanOut({ messageId, part: { index: 0, memberIds } });
    assert.deepEqual({ sent: again.sent, alreadySent: again.alreadySent }, { sent: 0, alreadySent: 30 });
    assert.equal(await t.db.collection('push_records').countDocuments({ 'message.data.messageId': messageId }), 100);
  });
});
