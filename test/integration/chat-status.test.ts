import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestApp, type Session, type TestApp } from '../helpers/app.js';
import { httpAs, makeRoom, makeUser, postMessage } from '../helpers/factories.js';
import { startSfuNode, type SfuNode } from '../../src/sfu/sfu-node.js';

interface RoomStatus {
  room: { id: string; name: string | null };
  unreadCount: number;
  lastMessage: { id: string; userId: string; message: string; truncated: boolean; encrypted: boolean; attachmentCount: number } | null;
  muted: boolean;
  enabled: boolean;
  call: { callId: string; media: string; participantCount: number } | null;
}

describe('the chat status snapshot and read marks', () => {
  let t: TestApp;
  let sfu: SfuNode;
  const api = httpAs(() => t);
  before(async () => {
    t = await startTestApp({ SFU_RTC_MIN_PORT: '42000', SFU_RTC_MAX_PORT: '42999' });
    sfu = await startSfuNode(t.ctx.platform, { port: 0 });
  });
  after(async () => {
    await sfu.close();
    await t.close();
  });

  async function snapshot(s: Session, query = ''): Promise<{ items: RoomStatus[]; totalItems: number; totalPages: number; currentPage: number }> {
    const res = await api(s, 'GET', `/api/rooms/status${query}`);
    assert.equal(res.statusCode, 200, res.body);
    return res.json();
  }
  const statusOf = async (s: Session, roomId: string) => (await snapshot(s)).items.find((item) => item.room.id === roomId);
  /** Moves the clock so that what happens next is later by a clear margin (the list is ordered by time). */
  const later = () => t.clock.advance(1_000);

  it('lists every room, latest activity first, with unread counts and the newest message', async () => {
    const [owner, member] = await Promise.all([makeUser(t), makeUser(t)]);
    const quiet = await makeRoom(t, owner, { members: [member], name: 'Quiet room' });
    later();
    const busy = await makeRoom(t, owner, { members: [member], name: 'Busy room' });
    later();
    const ids = [];
    for (const text of ['one', 'two', 'three']) ids.push(await postMessage(t, member, busy.id, text));

    const list = await snapshot(owner);
    assert.deepEqual(list.items.map((item) => item.room.id), [busy.id, quiet.id]);
    assert.equal(list.totalItems, 2);
    const [first, second] = list.items;
    assert.equal(first!.unreadCount, 3);
    assert.equal(first!.lastMessage?.id, ids[2]);
    assert.equal(first!.lastMessage?.message, 'three');
    assert.equal(first!.lastMessage?.userId, member.userId);
    assert.deepEqual([first!.muted, first!.enabled, first!.call], [false, true, null]);
    assert.equal(second!.unreadCount, 0);
    assert.equal(second!.lastMessage, null);
    // What the author posted counts as read for them.
    assert.equal((await statusOf(member, busy.id))?.unreadCount, 0);

    // A post moves a room to the top.
    later();
    await postMessage(t, owner, quiet.id, 'now me');
    assert.deepEqual((await snapshot(owner)).items.map((item) => item.room.id), [quiet.id, busy.id]);
    assert.equal((await statusOf(owner, quiet.id))?.unreadCount, 0);
    assert.equal((await statusOf(member, quiet.id))?.unreadCount, 1);
  });

  it('keeps an author\'s own posts read once others post after them (the mark follows the answer)', async () => {
    const [owner, member] = await Promise.all([makeUser(t), makeUser(t)]);
    const room = await makeRoom(t, owner, { members: [member] });
    await postMessage(t, owner, room.id, 'first');
    await postMessage(t, owner, room.id, 'second');
    // The newest message's author has read it all, before and after their mark is written.
    assert.equal((await statusOf(owner, room.id))?.unreadCount, 0);
    assert.equal((await statusOf(member, room.id))?.unreadCount, 2);
    await postMessage(t, member, room.id, 'third');
    // Who wrote the newest messages is kept with the room's count (the authors' marks may still wait).
    const activity = await t.db.collection<{ _id: string; recentAuthors?: string[] }>('room_activity').findOne({ _id: room.id });
    assert.deepEqual(activity?.recentAuthors, [owner.userId, owner.userId, member.userId]);
    // The owner has read up to their second post: only the member's is unread.
    assert.equal((await statusOf(owner, room.id))?.unreadCount, 1);
    assert.equal((await statusOf(member, room.id))?.unreadCount, 0);
    await postMessage(t, owner, room.id, 'fourth');
    // And the member's at theirs.
    assert.equal((await statusOf(member, room.id))?.unreadCount, 1);
  });

  it('moves the read mark forward only, to a message or to the newest', async () => {
    const [owner, member] = await Promise.all([makeUser(t), makeUser(t)]);
    const room = await makeRoom(t, owner, { members: [member] });
    const ids = [];
    for (let i = 0; i < 4; i++) ids.push(await postMessage(t, member, room.id, `m${i}`));
    assert.equal((await statusOf(owner, room.id))?.unreadCount, 4);

    assert.equal((await api(owner, 'POST', `/api/rooms/${room.id}/read`, { messageId: ids[1] })).statusCode, 204);
    assert.equal((await statusOf(owner, room.id))?.unreadCount, 2);
    // An older message does not move the mark back.
    assert.equal((await api(owner, 'POST', `/api/rooms/${room.id}/read`, { messageId: ids[0] })).statusCode, 204);
    assert.equal((await statusOf(owner, room.id))?.unreadCount, 2);
    // No body: everything read.
    assert.equal((await api(owner, 'POST', `/api/rooms/${room.id}/read`)).statusCode, 204);
    assert.equal((await statusOf(owner, room.id))?.unreadCount, 0);
  });

  it('refuses marks on rooms the caller is not in and on messages of other rooms, changing nothing', async () => {
    const [owner, member, outsider] = await Promise.all([makeUser(t), makeUser(t), makeUser(t)]);
    const room = await makeRoom(t, owner, { members: [member] });
    const elsewhere = await makeRoom(t, member);
    const message = await postMessage(t, member, room.id, 'hello');
    const foreign = await postMessage(t, member, elsewhere.id, 'over there');

    const outside = await api(outsider, 'POST', `/api/rooms/${room.id}/read`, { messageId: message });
    assert.equal(outside.statusCode, 400);
    assert.equal(outside.json().code, 'NOT_A_MEMBER');
    const wrongRoom = await api(owner, 'POST', `/api/rooms/${room.id}/read`, { messageId: foreign });
    assert.equal(wrongRoom.statusCode, 400);
    assert.equal(wrongRoom.json().code, 'MESSAGE_NOT_FOUND');
    const badId = await api(owner, 'POST', `/api/rooms/${room.id}/read`, { messageId: 'nope' });
    assert.equal(badId.statusCode, 400);
    assert.equal(badId.json().code, 'VALIDATION_FAILED');
    assert.equal((await statusOf(owner, room.id))?.unreadCount, 1);
  });

  it('starts a new member with the history read, and does not count comments', async () => {
    const [owner, joiner] = await Promise.all([makeUser(t), makeUser(t)]);
    const group = await makeRoom(t, owner, { type: 'PUBLIC_GROUP' });
    const first = await postMessage(t, owner, group.id, 'before you came');
    assert.equal((await api(joiner, 'POST', `/api/rooms/${group.id}/join`)).statusCode, 200);
    assert.equal((await statusOf(joiner, group.id))?.unreadCount, 0);

    assert.equal((await api(owner, 'POST', `/api/rooms/${group.id}?name=Commented&description=&commentsEnabled=true&participantPublishEnabled=true`)).statusCode, 200);
    const comment = await api(owner, 'POST', `/api/messages/${first}/comments`, { message: 'a comment' });
    assert.equal(comment.statusCode, 200, comment.body);
    const status = await statusOf(joiner, group.id);
    assert.equal(status?.unreadCount, 0);
    assert.equal(status?.lastMessage?.id, first, 'a comment is not the room\'s newest message');
    await postMessage(t, owner, group.id, 'after you came');
    assert.equal((await statusOf(joiner, group.id))?.unreadCount, 1);
  });

  it('shows muted and disabled memberships and the call in progress', async () => {
    const [owner, member] = await Promise.all([makeUser(t), makeUser(t)]);
    const room = await makeRoom(t, owner, { members: [member] });
    assert.equal((await api(member, 'POST', `/api/rooms/${room.id}/muted?muted=true`)).statusCode, 200);
    assert.equal((await api(owner, 'POST', `/api/rooms/${room.id}/members/${member.userId}/enabled?enabled=false`)).statusCode, 204);
    const started = await api(owner, 'POST', '/api/calls', { roomId: room.id, media: 'VIDEO' });
    assert.equal(started.statusCode, 200, started.body);

    const status = await statusOf(member, room.id);
    assert.equal(status?.muted, true);
    assert.equal(status?.enabled, false);
    assert.equal(status?.call?.callId, started.json().id);
    assert.equal(status?.call?.media, 'VIDEO');
    assert.equal(status?.call?.participantCount, 1);
    assert.equal((await api(owner, 'POST', `/api/calls/${started.json().id}/end`)).statusCode, 200);
    assert.equal((await statusOf(member, room.id))?.call, null);
  });

  it('cuts long texts, pages, and leaves out rooms the caller left', async () => {
    const owner = await makeUser(t);
    const rooms = [];
    for (let i = 0; i < 3; i++) {
      rooms.push(await makeRoom(t, owner));
      later();
    }
    await postMessage(t, owner, rooms[0]!.id, 'x'.repeat(281));
    const top = (await snapshot(owner)).items[0]!;
    assert.equal(top.lastMessage?.message, 'x'.repeat(280));
    assert.equal(top.lastMessage?.truncated, true);

    const pages = await Promise.all([0, 1, 2].map((n) => snapshot(owner, `?pageSize=1&currentPage=${n}`)));
    assert.deepEqual(pages.map((p) => p.totalItems), [3, 3, 3]);
    assert.equal(new Set(pages.map((p) => p.items[0]!.room.id)).size, 3);
    // A page of some of the rooms says of each what the page of all of them says (two ways of reading the activity).
    const whole = new Map((await snapshot(owner)).items.map((item) => [item.room.id, item]));
    for (const one of pages) assert.deepEqual(one.items[0], whole.get(one.items[0]!.room.id));
    assert.equal((await snapshot(owner, '?pageSize=1&currentPage=3')).items.length, 0);
    for (const bad of ['?pageSize=0', '?pageSize=501', '?currentPage=-1']) assert.equal((await api(owner, 'GET', `/api/rooms/status${bad}`)).statusCode, 400, bad);

    assert.equal((await api(owner, 'POST', `/api/rooms/${rooms[1]!.id}/leave`)).statusCode, 204);
    assert.equal((await snapshot(owner)).totalItems, 2);
  });
});
