import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { signIn, startTestApp, type Session, type TestApp } from '../helpers/app.js';
import { connectAll, httpAs, makeRoom } from '../helpers/factories.js';
import { DeviceClient, spawnHub, type HubProcess } from '../helpers/hubs.js';
import { countRoundTrips } from '../helpers/round-trips.js';
import { until } from '../helpers/wait.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('messages', () => {
  let t: TestApp;
  let hubs: HubProcess[];
  const clients: DeviceClient[] = [];
  before(async () => {
    t = await startTestApp();
    hubs = await Promise.all([spawnHub(t.config), spawnHub(t.config)]);
  });
  after(async () => {
    for (const c of clients) c.close();
    await Promise.all(hubs.map((h) => h.kill()));
    await t.close();
  });

  const api = httpAs(() => t);
  const post = (s: Session, roomId: string, message: string, extra: object = {}) => api(s, 'PUT', `/api/messages/${roomId}`, { roomId, message, ...extra });

  async function group(type: string, extra: object = {}) {
    const [creator, admin, member, disabled, outsider] = await Promise.all(Array.from({ length: 5 }, () => signIn(t)));
    await connectAll(t, creator!, [admin!, member!, disabled!]);
    const res = await api(creator!, 'POST', '/api/rooms', { type, name: `Talk ${Math.random().toString(36).slice(2, 8)}`, memberIds: [admin!.userId, member!.userId, disabled!.userId], ...extra });
    const room = res.json();
    await api(creator!, 'POST', `/api/rooms/${room.id}/admins/${admin!.userId}`);
    await api(creator!, 'POST', `/api/rooms/${room.id}/members/${disabled!.userId}/enabled?enabled=false`);
    return { room, creator: creator!, admin: admin!, member: member!, disabled: disabled!, outsider: outsider! };
  }

  it('rule 1: enabled members post and get the id; others are refused; roomId must match', async () => {
    const g = await group('PRIVATE_GROUP');
    const res = await post(g.member, g.room.id, '  Hello\u0000 there  ');
    assert.equal(res.statusCode, 200);
    const id = res.json();
    assert.match(id, /^[0-9a-f]{24}$/);
    const stored = await t.ctx.repos.messages.findById(id);
    assert.equal(stored?.message, 'Hello there', 'cleaned');
    assert.equal(stored?.userId, g.member.userId);
    for (const who of [g.disabled, g.outsider]) assert.equal((await post(who, g.room.id, 'hi')).json().code, 'NOT_A_MEMBER');
    const mismatch = await api(g.member, 'PUT', `/api/messages/${g.room.id}`, { roomId: 'other-room', message: 'hi' });
    assert.equal(mismatch.json().code, 'ROOM_ID_MISMATCH');
    const spoof = await api(g.member, 'PUT', `/api/messages/${g.room.id}`, { roomId: g.room.id, message: 'as someone else', userId: g.creator.userId });
    assert.equal((await t.ctx.repos.messages.findById(spoof.json()))?.userId, g.member.userId, 'userId is ignored');
    assert.equal((await post(g.member, g.room.id, ' \n\t ')).json().code, 'MESSAGE_EMPTY');
    assert.equal((await post(g.member, g.room.id, 'x'.repeat(10_000))).statusCode, 200);
    assert.equal((await post(g.member, g.room.id, 'x'.repeat(10_001))).json().code, 'MESSAGE_TOO_LONG');
    assert.equal((await post(g.member, g.room.id, 'with file', { attachmentIds: ['nope'] })).json().code, 'ATTACHMENT_NOT_FOUND');
    assert.equal((await post(g.member, 'no-such-room', 'hi')).json().code, 'ROOM_NOT_FOUND');
  });

  it('a resend with the same client message id returns the first message, also when sent at the same moment', async () => {
    const { room, creator, member } = await group('PRIVATE_GROUP');
    const other = (await api(creator, 'POST', '/api/rooms', { type: 'PRIVATE_GROUP', name: 'Other talk', memberIds: [member.userId] })).json();
    const clientMessageId = 'c4a1f0de-0b6e-4d8e-9a34-2f5a0c1b7e11';
    const first = await post(member, room.id, 'On my way', { clientMessageId });
    assert.equal(first.statusCode, 200, first.body);
    assert.equal((await post(member, room.id, 'On my way', { clientMessageId })).json(), first.json(), 'the lost answer, again');
    const together = await Promise.all(Array.from({ length: 5 }, () => post(member, room.id, 'Coming!', { clientMessageId: 'd1e2f3a4-0000-4000-8000-000000000001' })));
    assert.equal(new Set(together.map((r) => r.json())).size, 1, 'five sends at once make one message');
    // Unique per author and room: another room, or another author, makes its own message.
    assert.notEqual((await post(member, other.id, 'On my way', { clientMessageId })).json(), first.json());
    assert.notEqual((await post(creator, room.id, 'On my way', { clientMessageId })).json(), first.json());
    const timeline = (await api(creator, 'GET', `/api/messages/${room.id}`)).json().items as { message: string; userId: string }[];
    assert.deepEqual(timeline.filter((m) => m.userId === member.userId).map((m) => m.message), ['Coming!', 'On my way']);
    assert.equal((await post(member, room.id, 'x', { clientMessageId: 'short' })).statusCode, 400);
  });

  it('posts sent at the same moment take their timeline numbers together: each its own, in one run, the newest last', async () => {
    const { room, creator, member } = await group('PRIVATE_GROUP');
    assert.equal((await post(member, room.id, 'before')).statusCode, 200);
    const { mongo, result } = await countRoundTrips(t.db.client, () => Promise.all(Array.from({ length: 20 }, (_, i) => post(member, room.id, `at once ${i}`))));
    assert.ok(result.every((res) => res.statusCode === 200));
    const numbering = mongo.filter((command) => command === 'findAndModify room_activity').length;
    assert.ok(numbering < 20, `${numbering} updates of the room's number for 20 posts`);
    const docs = await t.db.collection<{ _id: string; seq: number }>('messages').find({ _id: { $in: result.map((res) => res.json() as string) } }).toArray();
    const bySeq = docs.sort((a, b) => a.seq - b.seq);
    assert.deepEqual(bySeq.map((doc) => doc.seq), Array.from({ length: 20 }, (_, i) => i + 2));
    const activity = await t.db.collection<{ _id: string; count: number; last: { id: string } }>('room_activity').findOne({ _id: room.id });
    assert.equal(activity?.count, 21);
    assert.equal(activity?.last.id, bySeq.at(-1)?._id, 'the newest message is the one with the highest number');
    const unread = async (who: Session) => ((await api(who, 'GET', '/api/rooms/status')).json().items as { room: { id: string }; unreadCount: number }[]).find((item) => item.room.id === room.id)?.unreadCount;
    assert.equal(await unread(creator), 21);
    assert.equal(await unread(member), 0, 'the author has read what they wrote');
  });

  it('rule 1: broadcast rooms and rooms without participant publishing take posts from creator and admins only', async () => {
    const b = await group('BROADCAST');
    assert.equal((await post(b.creator, b.room.id, 'news')).statusCode, 200);
    assert.equal((await post(b.admin, b.room.id, 'more news')).statusCode, 200);
    assert.equal((await post(b.member, b.room.id, 'me too')).json().code, 'PUBLISH_NOT_ALLOWED');

    const p = await group('PUBLIC_GROUP');
    await api(p.creator, 'POST', `/api/rooms/${p.room.id}?name=${encodeURIComponent(p.room.name)}&description=&commentsEnabled=false&participantPublishEnabled=false`);
    assert.equal((await post(p.member, p.room.id, 'hello')).json().code, 'PUBLISH_NOT_ALLOWED');
    assert.equal((await post(p.admin, p.room.id, 'hello')).statusCode, 200);
    // The publish switch lets one participant post again.
    await api(p.admin, 'POST', `/api/rooms/${p.room.id}/${p.member.userId}/publish-enabled?publishEnabled=true`);
    assert.equal((await post(p.member, p.room.id, 'thanks')).statusCode, 200);
    // And takes it away in a room where participants may post.
    const open = await group('PRIVATE_GROUP');
    await api(open.creator, 'POST', `/api/rooms/${open.room.id}/${open.member.userId}/publish-enabled?publishEnabled=false`);
    assert.equal((await post(open.member, open.room.id, 'hi')).json().code, 'PUBLISH_NOT_ALLOWED');
  });

  it('rule 1: an end-to-end encrypted room takes only encrypted messages', async () => {
    const e = await group('E2EE');
    assert.equal((await post(e.member, e.room.id, 'plain text, not encrypted')).json().code, 'MESSAGE_NOT_ENCRYPTED');
    const ciphertext = randomBytes(60).toString('base64');
    const res = await post(e.member, e.room.id, ciphertext);
    assert.equal(res.statusCode, 200);
    const stored = await t.ctx.repos.messages.findById(res.json());
    assert.equal(stored?.message, ciphertext);
    assert.equal(stored?.encrypted, true);
  });

  it('a block ends a direct chat', async () => {
    const [a, b] = await Promise.all([signIn(t), signIn(t)]);
    const room = await makeRoom(t, a, { type: 'DIRECT', members: [b] });
    assert.equal((await post(a, room.id, 'hi')).statusCode, 200);
    await api(b, 'POST', `/api/users/blocks?blockedUserId=${a.userId}`);
    assert.equal((await post(a, room.id, 'still there?')).json().code, 'BLOCKED');
    assert.equal((await post(b, room.id, 'bye')).json().code, 'BLOCKED');
  });

  it('reads with cursors both ways: history with before, catch-up with after', async () => {
    const g = await group('PRIVATE_GROUP');
    const ids: string[] = [];
    for (let i = 1; i <= 25; i++) ids.push((await post(g.member, g.room.id, `m${i}`)).json());
    const read = async (query: string) => (await api(g.admin, 'GET', `/api/messages/${g.room.id}?${query}`)).json();
    const newest = await read('limit=10');
    assert.deepEqual(newest.items.map((m: { message: string }) => m.message), Array.from({ length: 10 }, (_, i) => `m${25 - i}`));
    assert.equal(newest.hasMore, true);
    const older = await read(`limit=10&before=${newest.items.at(-1).id}`);
    assert.deepEqual(older.items.map((m: { message: string }) => m.message), Array.from({ length: 10 }, (_, i) => `m${15 - i}`));
    const oldest = await read(`limit=10&before=${older.items.at(-1).id}`);
    assert.equal(oldest.items.length, 5);
    assert.equal(oldest.hasMore, false);

    // A device that last saw m5 catches up 10 at a time, oldest batch first, each page newest first.
    const first = await read(`limit=10&after=${ids[4]}`);
    assert.deepEqual(first.items.map((m: { message: string }) => m.message), Array.from({ length: 10 }, (_, i) => `m${15 - i}`));
    assert.equal(first.hasMore, true);
    const second = await read(`limit=10&after=${first.items[0].id}`);
    assert.deepEqual(second.items.map((m: { message: string }) => m.message), Array.from({ length: 10 }, (_, i) => `m${25 - i}`));
    assert.equal(second.hasMore, false);

    for (const who of [g.outsider]) assert.equal((await api(who, 'GET', `/api/messages/${g.room.id}`)).json().code, 'ROOM_NOT_FOUND');
    assert.equal((await api(g.admin, 'GET', `/api/messages/${g.room.id}?before=${ids[0]}&after=${ids[1]}`)).json().code, 'CURSOR_CONFLICT');
    assert.equal((await api(g.admin, 'GET', `/api/messages/${g.room.id}?limit=101`)).statusCode, 400);
    assert.equal((await api(g.admin, 'GET', `/api/messages/${g.room.id}?before=not-an-id`)).statusCode, 400);
  });

  it('live delivery: one broadcast reaches every member socket on both nodes, follows joins and leaves', async () => {
    const g = await group('PUBLIC_GROUP');
    const seen = new Map<string, unknown[]>();
    const listen = async (s: Session, hub: HubProcess) => {
      const c = new DeviceClient(s.accessToken);
      clients.push(c);
      await c.connect(hub.port);
      const got: unknown[] = [];
      seen.set(s.userId, got);
      c.socket!.on('message.new', (payload: unknown) => got.push(payload));
    };
    await listen(g.creator, hubs[0]!);
    await listen(g.member, hubs[1]!);
    await listen(g.disabled, hubs[0]!);
    await listen(g.outsider, hubs[1]!);

    const id = (await post(g.member, g.room.id, 'live!')).json();
    await until(() => [g.creator, g.member, g.disabled].every((who) => seen.get(who.userId)!.length >= 1), 'the post on every member socket');
    const expected = { id, messageId: id, roomId: g.room.id, userId: g.member.userId, message: 'live!', encrypted: false };
    for (const who of [g.creator, g.member, g.disabled]) {
      const got = seen.get(who.userId)! as Record<string, unknown>[];
      assert.equal(got.length, 1, 'members, disabled ones too, see it live');
      assert.deepEqual({ id: got[0]!.id, messageId: got[0]!.messageId, roomId: got[0]!.roomId, userId: got[0]!.userId, message: got[0]!.message, encrypted: got[0]!.encrypted }, expected);
    }
    assert.equal(seen.get(g.outsider.userId)!.length, 0);

    // The outsider joins while connected: the next message reaches them; the member leaves and does not get it.
    await api(g.outsider, 'POST', `/api/rooms/${g.room.id}/join`);
    await api(g.member, 'POST', `/api/rooms/${g.room.id}/leave`);
    await sleep(200);
    await post(g.creator, g.room.id, 'after the change');
    await until(() => seen.get(g.outsider.userId)!.length >= 1 && seen.get(g.creator.userId)!.length >= 2, 'the second post on the sockets of the room');
    assert.equal(seen.get(g.outsider.userId)!.length, 1);
    assert.equal(seen.get(g.member.userId)!.length, 1);
    assert.equal(seen.get(g.creator.userId)!.length, 2);
  });
});
