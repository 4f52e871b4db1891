import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Workers } from '../../workers/main.js';
import { freshPhone, signIn, startTestApp, startTestWorkers, type Session, type TestApp } from '../helpers/app.js';
import { connect, httpAs, makeRoom, postMessage } from '../helpers/factories.js';
import { until } from '../helpers/wait.js';

interface Recorded {
  token: string;
  message: { alert?: { title: string; body: string }; data: Record<string, string> };
}

/** Mentions and how loud each room is for each member (issue 57, items 1-3), pushed through the local provider. */
describe('notifications people control: mentions and levels per room', () => {
  let t: TestApp;
  let workers: Workers;
  const api = httpAs(() => t);

  before(async () => {
    t = await startTestApp();
    workers = await startTestWorkers(t);
  });
  after(async () => {
    await workers?.close();
    await t?.close();
  });

  const tokenOf = (s: Session) => `fcm-levels-${s.deviceId}`;
  const withToken = async (s: Session) => {
    assert.equal((await api(s, 'PUT', '/api/devices/push-token', { token: tokenOf(s), provider: 'FCM' })).statusCode, 204);
    return s;
  };
  const pushesTo = async (s: Session, messageId: string) => (await t.db.collection('push_records').find({ token: tokenOf(s), 'message.data.messageId': messageId }).toArray()) as unknown as Recorded[];
  /** Waits until the post's push job has finished, then what reached `s`. */
  const afterJob = async (s: Session, messageId: string) => {
    const jobKey = `${t.ctx.platform.queues.prefixOf('message-push')}:message-push:message-${messageId}`;
    // A post nobody could be pushed starts no job at all.
    await until(async () => !(await t.ctx.platform.redis.exists(jobKey)) || Boolean(await t.ctx.platform.redis.hget(jobKey, 'finishedOn')), `the job of ${messageId}`, 10_000);
    await new Promise((resolve) => setTimeout(resolve, 200));
    return pushesTo(s, messageId);
  };
  const levels = (s: Session, roomId: string) => api(s, 'GET', `/api/rooms/${roomId}/notifications`);

  it('mentions: members only (others left out, never an error); the whole room by its creator and admins only; in the message as posted', async () => {
    const [owner, member, stranger] = await Promise.all([signIn(t), signIn(t), signIn(t)]);
    const room = await makeRoom(t, owner, { name: 'Climbers', members: [member] });
    const posted = await api(member, 'PUT', `/api/messages/${room.id}`, { roomId: room.id, message: 'Hi both', mentions: [owner.userId, stranger.userId, owner.userId] });
    assert.equal(posted.statusCode, 200, posted.body);
    const page = (await api(owner, 'GET', `/api/messages/${room.id}`)).json() as { items: { id: string; mentions: string[]; mentionsRoom: boolean }[] };
    const shown = page.items.find((m) => m.id === posted.json());
    assert.deepEqual([shown?.mentions, shown?.mentionsRoom], [[owner.userId], false]);
    const everyone = await api(member, 'PUT', `/api/messages/${room.id}`, { roomId: room.id, message: 'Everyone!', mentionsRoom: true });
    assert.deepEqual([everyone.statusCode, everyone.json().code], [400, 'MENTION_ROOM_NOT_ALLOWED']);
    assert.equal((await api(owner, 'PUT', `/api/messages/${room.id}`, { roomId: room.id, message: 'Everyone!', mentionsRoom: true })).statusCode, 200);
    const tooMany = await api(owner, 'PUT', `/api/messages/${room.id}`, { roomId: room.id, message: 'x', mentions: Array.from({ length: 51 }, (_, i) => `user-${i}`) });
    assert.deepEqual([tooMany.statusCode, tooMany.json().code], [400, 'VALIDATION_FAILED']);
    assert.equal((await api(owner, 'PUT', `/api/messages/${room.id}`, { roomId: room.id, message: 'x', mentions: Array.from({ length: 50 }, (_, i) => `user-${i}`) })).statusCode, 200, '50 is the edge');
  });

  it('a level per member and room: defaults, set and read back, the spec\'s mute on the same state, the member\'s other devices told', async () => {
    const phone = freshPhone();
    const [owner, member] = await Promise.all([signIn(t), signIn(t, phone)]);
    const tablet = await signIn(t, phone, { name: 'Tablet', platform: 'ANDROID' });
    const room = await makeRoom(t, owner, { members: [member] });
    assert.deepEqual((await levels(member, room.id)).json(), { roomId: room.id, level: 'ALL', mutedUntil: null, levelNow: 'ALL' }, 'a small group: ALL');
    const set = await api(member, 'PUT', `/api/rooms/${room.id}/notifications`, { level: 'MENTIONS' });
    assert.deepEqual(set.json(), { roomId: room.id, level: 'MENTIONS', mutedUntil: null, levelNow: 'MENTIONS' });
    assert.equal((await api(member, 'GET', `/api/rooms/${room.id}/muted`)).json().muted, false);
    // The spec's mute reads and writes the same state: muted is NONE, unmuting ALL.
    assert.equal((await api(member, 'POST', `/api/rooms/${room.id}/muted?muted=true`)).json().muted, true);
    assert.equal((await levels(member, room.id)).json().level, 'NONE');
    assert.equal((await api(member, 'POST', `/api/rooms/${room.id}/muted?muted=false`)).json().muted, false);
    assert.equal((await levels(member, room.id)).json().level, 'ALL');
    // A mute with an end: NONE now, the level after; the spec's muted says true meanwhile.
    const until = new Date(Date.now() + 3_600_000).toISOString();
    const muted = (await api(member, 'PUT', `/api/rooms/${room.id}/notifications`, { level: 'MENTIONS', mutedUntil: until })).json();
    assert.deepEqual([muted.level, muted.mutedUntil, muted.levelNow], ['MENTIONS', until, 'NONE']);
    assert.equal((await api(member, 'GET', `/api/rooms/${room.id}/muted`)).json().muted, true);
    const status = (await api(member, 'GET', '/api/rooms/status')).json() as { items: { room: { id: string }; muted: boolean; notificationLevel: string }[] };
    assert.deepEqual(status.items.filter((item) => item.room.id === room.id).map((item) => [item.muted, item.notificationLevel]), [[true, 'NONE']]);
    // A mute that ended already is no mute.
    assert.equal((await api(member, 'PUT', `/api/rooms/${room.id}/notifications`, { level: 'ALL', mutedUntil: new Date(Date.now() - 1000).toISOString() })).json().levelNow, 'ALL');
    const refused = await api(member, 'PUT', `/api/rooms/${room.id}/notifications`, { level: 'LOUD' });
    assert.deepEqual([refused.statusCode, refused.json().code], [400, 'VALIDATION_FAILED']);
    assert.equal((await api(owner, 'GET', `/api/rooms/${room.id}/notifications`)).json().level, 'ALL', 'each member their own');
    // The member's other device heard each change; the device that made them did not.
    const told = async (s: Session) => (await t.ctx.services.inbox.readAfter(s.deviceId, 0)).filter((entry) => entry.event === 'room.notifications-changed').map((entry) => (entry.data as { level: string }).level);
    assert.deepEqual(await told(tablet), ['MENTIONS', 'NONE', 'ALL', 'MENTIONS', 'ALL']);
    assert.deepEqual(await told(member), []);
  });

  it('pushes follow the level: MENTIONS only for mentions, the room\'s and replies; NONE nothing; a mute with an end stops every push, then they resume', async () => {
    const [owner, quiet, muted, loud] = (await Promise.all(Array.from({ length: 4 }, () => signIn(t).then(withToken)))) as [Session, Session, Session, Session];
    const room = await makeRoom(t, owner, { name: 'Orchestra', members: [quiet, muted, loud] });
    assert.equal((await api(quiet, 'PUT', `/api/rooms/${room.id}/notifications`, { level: 'MENTIONS' })).statusCode, 200);
    const soon = new Date(Date.now() + 2_500).toISOString();
    assert.equal((await api(muted, 'PUT', `/api/rooms/${room.id}/notifications`, { level: 'ALL', mutedUntil: soon })).statusCode, 200);

    const plain = await postMessage(t, owner, room.id, 'Rehearsal at six');
    assert.equal((await afterJob(loud, plain)).length, 1, 'ALL: pushed');
    assert.equal((await pushesTo(quiet, plain)).length, 0, 'MENTIONS: not for a plain post');
    assert.equal((await pushesTo(muted, plain)).length, 0, 'muted until later: nothing');

    const naming = await postMessage(t, owner, room.id, 'Bring the score', { mentions: [quiet.userId, muted.userId] });
    const [mention] = await afterJob(quiet, naming);
    assert.equal(mention?.message.data.category, 'MENTION');
    assert.match(mention?.message.alert?.body ?? '', /mentioned you: Bring the score$/);
    assert.equal((await pushesTo(muted, naming)).length, 0, 'a mute with an end stops mentions too');
    assert.equal((await pushesTo(loud, naming))[0]?.message.data.category, undefined, 'not a mention of the loud member');

    const all = await postMessage(t, owner, room.id, 'Everyone on stage', { mentionsRoom: true });
    assert.equal((await afterJob(quiet, all)).length, 1, 'the room mentioned: MENTIONS pushed');
    const quietsOwn = await postMessage(t, quiet, room.id, 'Which key?');
    const reply = await postMessage(t, owner, room.id, 'D minor', { replyToId: quietsOwn });
    assert.equal((await afterJob(quiet, reply)).length, 1, 'a reply to their message: MENTIONS pushed');

    // The mute ends by itself: the next plain post reaches the member again.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, new Date(soon).getTime() - Date.now() + 200)));
    const later = await postMessage(t, owner, room.id, 'Encore');
    assert.equal((await afterJob(muted, later)).length, 1, 'pushed again once the mute ended');
    // NONE: nothing, mentions included.
    assert.equal((await api(loud, 'POST', `/api/rooms/${room.id}/muted?muted=true`)).statusCode, 200);
    const ignored = await postMessage(t, owner, room.id, 'Last call', { mentions: [loud.userId] });
    assert.equal((await afterJob(loud, ignored)).length, 0);
  });
  it('counts: the chat list\'s unread mentions per room; the badge counts ALL rooms\' unread messages and MENTIONS rooms\' unread mentions; reading clears both', async () => {
    const [owner, member] = (await Promise.all([signIn(t), signIn(t).then(withToken)])) as [Session, Session];
    const quietRoom = await makeRoom(t, owner, { name: 'Quiet', members: [member] });
    const loudRoom = await makeRoom(t, owner, { name: 'Loud', members: [member] });
    assert.equal((await api(member, 'PUT', `/api/rooms/${quietRoom.id}/notifications`, { level: 'MENTIONS' })).statusCode, 200);
    await postMessage(t, owner, quietRoom.id, 'one');
    await postMessage(t, owner, quietRoom.id, 'two', { mentions: [member.userId] });
    await postMessage(t, owner, quietRoom.id, 'three');
    await postMessage(t, owner, loudRoom.id, 'hello');
    const statusOf = async () => {
      const items = (await api(member, 'GET', '/api/rooms/status')).json().items as { room: { id: string }; unreadCount: number; unreadMentions: number }[];
      return Object.fromEntries(items.map((item) => [item.room.id, [item.unreadCount, item.unreadMentions]]));
    };
    await until(async () => (await statusOf())[quietRoom.id]?.[1] === 1, 'the mention noted', 5_000);
    assert.deepEqual(await statusOf(), { [quietRoom.id]: [3, 1], [loudRoom.id]: [1, 0] });
    // The next push's badge: the loud room's 2 unread, the quiet room's 1 unread mention (not its 3 unread).
    const pushedNow = await postMessage(t, owner, loudRoom.id, 'again');
    const [push] = await afterJob(member, pushedNow);
    assert.equal((push?.message as { badge?: number } | undefined)?.badge, 3);
    // Reading the quiet room clears its unread messages and mentions.
    assert.equal((await api(member, 'POST', `/api/rooms/${quietRoom.id}/read`)).statusCode, 204);
    assert.deepEqual((await statusOf())[quietRoom.id], [0, 0]);
  });
  it('do-not-disturb and quiet hours (across midnight, in the user\'s time zone): pushes go quiet, calls ring only from connections when allowed', async () => {
    const [owner, member] = (await Promise.all([signIn(t), signIn(t).then(withToken)])) as [Session, Session];
    await connect(t, owner, member);
    const room = await makeRoom(t, owner, { name: 'Night shift', members: [member] });
    assert.deepEqual((await api(member, 'GET', '/api/users/me/notifications')).json(), { doNotDisturbUntil: null, quietHours: null, callsFromConnections: true });
    // Now, in a time zone 14 hours ahead of UTC: quiet from an hour ago until two hours ago the next
    // day (a 23-hour window that crosses midnight), so now is inside it wherever the server runs.
    const timeZone = 'Pacific/Kiritimati';
    const local = new Intl.DateTimeFormat('en-GB', { timeZone, hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }).format(new Date());
    const shift = (hours: number) => `${String((Number(local.slice(0, 2)) + hours + 24) % 24).padStart(2, '0')}:${local.slice(3, 5)}`;
    const set = (body: object) => api(member, 'PUT', '/api/users/me/notifications', body);
    assert.deepEqual([(await set({ quietHours: { start: '22:00', end: '07:00', timeZone: 'Mars/Olympus' } })).json().code, (await set({ quietHours: { start: '25:00', end: '07:00', timeZone } })).json().code], ['VALIDATION_FAILED', 'VALIDATION_FAILED']);
    const quiet = await set({ quietHours: { start: shift(-1), end: shift(-2), timeZone }, callsFromConnections: false });
    assert.deepEqual(quiet.json().quietHours, { start: shift(-1), end: shift(-2), timeZone }, quiet.body);

    const hush = await postMessage(t, owner, room.id, 'Are you up?');
    const [silent] = await afterJob(member, hush);
    assert.equal((silent?.message as { quiet?: boolean } | undefined)?.quiet, true, 'pushed quietly');
    // A call from a connection does not ring while calls from connections are off; on, it rings.
    const ringsOf = async () => (await t.db.collection('push_records').find({ token: tokenOf(member), 'message.data.event': 'call.incoming' }).toArray()).length;
    const call = async () => {
      const started = await api(owner, 'POST', '/api/calls', { calleeId: member.userId, media: 'AUDIO' });
      assert.equal(started.statusCode, 200, started.body);
      const callId = started.json().id as string;
      await new Promise((resolve) => setTimeout(resolve, 800));
      assert.equal((await api(owner, 'POST', `/api/calls/${callId}/end`)).statusCode < 300, true);
    };
    await call();
    assert.equal(await ringsOf(), 0, 'no ring from a connection with calls from connections off');
    assert.ok((await t.ctx.services.inbox.readAfter(member.deviceId, 0)).some((entry) => entry.event === 'call.incoming'), 'the open app still hears of it');
    await set({ callsFromConnections: true });
    await call();
    await until(async () => (await ringsOf()) === 1, 'a ring from a connection', 5_000);

    // Quiet hours that do not hold now, and no do-not-disturb: pushes are loud again.
    await set({ quietHours: { start: shift(1), end: shift(2), timeZone } });
    const loud = await postMessage(t, owner, room.id, 'Morning!');
    const [alerting] = await afterJob(member, loud);
    assert.equal((alerting?.message as { quiet?: boolean } | undefined)?.quiet, undefined);
    // Do-not-disturb until a time: quiet again.
    await set({ doNotDisturbUntil: new Date(Date.now() + 3_600_000).toISOString() });
    const [again] = await afterJob(member, await postMessage(t, owner, room.id, 'Still there?'));
    assert.equal((again?.message as { quiet?: boolean } | undefined)?.quiet, true);
  });
  it('an edit that adds a mention pushes the newly mentioned once, and counts among their unread mentions', async () => {
    const [owner, member, other] = (await Promise.all([signIn(t), signIn(t).then(withToken), signIn(t).then(withToken)])) as [Session, Session, Session];
    const room = await makeRoom(t, owner, { name: 'Edits', members: [member, other] });
    for (const s of [member, other]) assert.equal((await api(s, 'PUT', `/api/rooms/${room.id}/notifications`, { level: 'MENTIONS' })).statusCode, 200);
    const messageId = await postMessage(t, owner, room.id, 'See you at five');
    assert.equal((await afterJob(member, messageId)).length, 0, 'a plain post: MENTIONS members are not pushed');
    const edit = (mentions: string[]) => api(owner, 'PATCH', `/api/messages/${messageId}`, { message: 'See you at five, @you', mentions });
    const edited = await edit([member.userId]);
    assert.deepEqual([edited.statusCode, edited.json().mentions], [200, [member.userId]], edited.body);
    await until(async () => (await pushesTo(member, messageId)).length > 0, 'the mention pushed', 10_000);
    const [push] = await pushesTo(member, messageId);
    assert.equal(push?.message.data.category, 'MENTION');
    // The same mentions again, and a second member added: only the new one is pushed; nobody twice.
    assert.equal((await edit([member.userId, other.userId])).statusCode, 200);
    await until(async () => (await pushesTo(other, messageId)).length > 0, 'the second mention pushed', 10_000);
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.deepEqual([(await pushesTo(member, messageId)).length, (await pushesTo(other, messageId)).length], [1, 1]);
    const status = (await api(member, 'GET', '/api/rooms/status')).json().items as { room: { id: string }; unreadMentions: number }[];
    assert.equal(status.find((item) => item.room.id === room.id)?.unreadMentions, 1);
  });
});
