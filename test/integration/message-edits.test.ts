import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Workers } from '../../workers/main.js';
import { startTestApp, startTestWorkers, type Session, type TestApp } from '../helpers/app.js';
import { httpAs, makeRoom, makeUser, postMessage } from '../helpers/factories.js';
import { DeviceClient, spawnHub, type HubProcess } from '../helpers/hubs.js';
import { multipart } from '../helpers/multipart.js';
import { until } from '../helpers/wait.js';

describe('editing, deleting and replying to messages (issue 42, items 1-3)', () => {
  let t: TestApp;
  const hubs: HubProcess[] = [];
  const clients: DeviceClient[] = [];
  let workers: Workers;
  const api = httpAs(() => t);

  before(async () => {
    t = await startTestApp();
    workers = await startTestWorkers(t);
    hubs.push(await spawnHub(t.config), await spawnHub(t.config));
  });
  after(async () => {
    for (const client of clients) client.close();
    await Promise.all(hubs.map((hub) => hub.kill()));
    await workers?.close();
    await t?.close();
  });

  /** A member's socket on a hub, recording the room broadcasts about messages in order. */
  async function listen(s: Session, hub: HubProcess) {
    const client = new DeviceClient(s.accessToken);
    clients.push(client);
    await client.connect(hub.port);
    const seen: [string, string][] = [];
    client.socket!.onAny((event: string, payload: { messageId?: string }) => {
      if (event.startsWith('message.') && payload.messageId) seen.push([event, payload.messageId]);
    });
    return seen;
  }

  it('an edit and a delete reach every member\'s socket once, in order, after the message itself, on both hubs', async () => {
    const [author, member] = await Promise.all([makeUser(t), makeUser(t)]);
    const room = await makeRoom(t, author, { members: [member] });
    const [onAuthor, onMember] = [await listen(author, hubs[0]!), await listen(member, hubs[1]!)];
    const messageId = await postMessage(t, author, room.id, 'Helo');
    const edited = await api(author, 'PATCH', `/api/messages/${messageId}`, { message: '  Hello  ' });
    assert.equal(edited.statusCode, 200, edited.body);
    assert.equal(edited.json().message, 'Hello', 'cleaned as a post is');
    assert.ok(edited.json().editedAt);
    assert.equal((await api(author, 'DELETE', `/api/messages/${messageId}`)).statusCode, 204);
    const expected = [['message.new', messageId], ['message.edited', messageId], ['message.deleted', messageId]];
    await until(() => onAuthor.length >= 3 && onMember.length >= 3, 'three broadcasts on both sockets');
    // A later message shows nothing more of this one came.
    const later = await postMessage(t, author, room.id, 'After');
    await until(() => onMember.some(([, id]) => id === later), 'the later message');
    assert.deepEqual(onMember.filter(([, id]) => id === messageId), expected);
    assert.deepEqual(onAuthor.filter(([, id]) => id === messageId), expected);
    const versions = (await api(member, 'GET', `/api/messages/${messageId}/edits`)).json();
    assert.deepEqual(versions.versions.map((v: { message: string }) => v.message), [''], 'a deleted message keeps no versions');
  });

  it('edits: the author only, within the window; earlier versions readable by members; the chat list\'s preview follows', async () => {
    const [author, member, stranger] = await Promise.all([makeUser(t), makeUser(t), makeUser(t)]);
    const room = await makeRoom(t, author, { members: [member] });
    const messageId = await postMessage(t, author, room.id, 'First');
    assert.equal((await api(author, 'PATCH', `/api/messages/${messageId}`, { message: 'Second' })).statusCode, 200);
    const versions = (await api(member, 'GET', `/api/messages/${messageId}/edits`)).json() as { versions: { message: string; replacedAt: string | null }[] };
    assert.deepEqual(versions.versions.map((v) => v.message), ['First', 'Second']);
    assert.equal(versions.versions.at(-1)!.replacedAt, null);
    assert.equal((await t.db.collection('room_activity').findOne({ _id: room.id as never }))?.last?.message, 'Second');
    assert.equal((await api(member, 'PATCH', `/api/messages/${messageId}`, { message: 'Not mine' })).json().code, 'EDIT_NOT_ALLOWED');
    assert.equal((await api(stranger, 'PATCH', `/api/messages/${messageId}`, { message: 'Nope' })).statusCode, 400);
    assert.equal((await api(stranger, 'GET', `/api/messages/${messageId}/edits`)).statusCode, 400);
    assert.equal((await api(author, 'PATCH', `/api/messages/${messageId}`, { message: '   ' })).json().code, 'MESSAGE_EMPTY');
    // Messages posted 49 hours ago (their time moved back; tokens stay valid): past both windows.
    const postedLongAgo = (id: string) => t.db.collection('messages').updateOne({ _id: id as never }, { $set: { createdAt: new Date(Date.now() - 49 * 3_600_000) } });
    await postedLongAgo(messageId);
    assert.equal((await api(author, 'PATCH', `/api/messages/${messageId}`, { message: 'Too late' })).json().code, 'EDIT_WINDOW_PASSED');
    // Past the author's window, the author may no longer delete it; the room's creator still may.
    const other = await postMessage(t, member, room.id, 'Old words');
    await postedLongAgo(other);
    assert.equal((await api(member, 'DELETE', `/api/messages/${other}`)).json().code, 'DELETE_NOT_ALLOWED');
    assert.equal((await api(author, 'DELETE', `/api/messages/${other}`)).statusCode, 204);
  });

  it('deletes for everyone leave a tombstone and take the files (their ticket stops opening); scope=me hides for the caller only', async () => {
    const [author, member] = await Promise.all([makeUser(t), makeUser(t)]);
    const room = await makeRoom(t, author, { members: [member] });
    const body = multipart([{ filename: 'note.bin', content: Buffer.from('file bytes'), contentType: 'application/octet-stream' }], { payload: JSON.stringify({ roomId: room.id, message: 'With a file' }) });
    const uploaded = await t.app.inject({ method: 'POST', url: `/api/messages/${room.id}/attachments`, headers: { authorization: `Bearer ${author.accessToken}`, ...body.headers }, payload: body.payload });
    assert.equal(uploaded.statusCode, 204, uploaded.body);
    const page = (await api(member, 'GET', `/api/messages/${room.id}`)).json() as { items: { id: string; attachmentIds: string[] }[] };
    const withFile = page.items.find((m) => m.attachmentIds.length === 1)!;
    const ticket = (await api(member, 'POST', `/api/messages/${withFile.id}/attachments/${withFile.attachmentIds[0]}/ticket`)).json() as { url: string };
    const path = new URL(ticket.url).pathname;
    assert.equal((await t.app.inject({ url: path })).statusCode, 200);
    assert.equal((await api(member, 'DELETE', `/api/messages/${withFile.id}`)).json().code, 'DELETE_NOT_ALLOWED', 'a member deletes only their own');
    assert.equal((await api(author, 'DELETE', `/api/messages/${withFile.id}`)).statusCode, 204);
    assert.notEqual((await t.app.inject({ url: path })).statusCode, 200, 'the ticket still opens the file');
    const tombstone = ((await api(member, 'GET', `/api/messages/${room.id}`)).json().items as { id: string; deleted: boolean; message: string; attachmentIds: string[] }[]).find((m) => m.id === withFile.id);
    assert.deepEqual([tombstone?.deleted, tombstone?.message, tombstone?.attachmentIds], [true, '', []]);
    assert.equal(await t.db.collection('attachments').countDocuments({ messageId: withFile.id }), 0);
    assert.equal((await api(author, 'DELETE', `/api/messages/${withFile.id}`)).json().code, 'MESSAGE_DELETED');

    // Unread counts leave a deleted message out.
    const unread = async () => ((await api(member, 'GET', '/api/rooms/status')).json().items as { roomId?: string; room?: { id: string }; unreadCount: number }[]).find((item) => (item.roomId ?? item.room?.id) === room.id)?.unreadCount;
    const first = await postMessage(t, author, room.id, 'One');
    await postMessage(t, author, room.id, 'Two');
    const before = await unread();
    assert.equal((await api(author, 'DELETE', `/api/messages/${first}`)).statusCode, 204);
    assert.equal(await unread(), (before ?? 0) - 1);

    const hidden = await postMessage(t, author, room.id, 'Hide me');
    assert.equal((await api(member, 'DELETE', `/api/messages/${hidden}?scope=me`)).statusCode, 204);
    const ids = (s: Session) => api(s, 'GET', `/api/messages/${room.id}`).then((res) => (res.json().items as { id: string }[]).map((m) => m.id));
    assert.ok(!(await ids(member)).includes(hidden), 'hidden for the member');
    assert.ok((await ids(author)).includes(hidden), 'still there for the author');
  });

  it('replies carry an excerpt kept true through edits and deletes; another room\'s message or a stranger\'s is refused; encrypted rooms give ids only', async () => {
    const [author, member] = await Promise.all([makeUser(t), makeUser(t)]);
    const room = await makeRoom(t, author, { members: [member] });
    const otherRoom = await makeRoom(t, author);
    const original = await postMessage(t, author, room.id, 'x'.repeat(150));
    const elsewhere = await postMessage(t, author, otherRoom.id, 'Elsewhere');
    const reply = await postMessage(t, member, room.id, 'I agree', { replyToId: original });
    const read = async (id: string) => ((await api(member, 'GET', `/api/messages/${room.id}`)).json().items as { id: string; replyTo: { id: string; excerpt: string | null; kind: string } | null }[]).find((m) => m.id === id);
    assert.deepEqual((await read(reply))?.replyTo, { id: original, userId: author.userId, excerpt: 'x'.repeat(100), kind: 'TEXT' });
    const refused = await api(member, 'PUT', `/api/messages/${room.id}`, { roomId: room.id, message: 'Across rooms', replyToId: elsewhere });
    assert.equal(refused.statusCode, 400);
    assert.equal(refused.json().code, 'REPLY_TO_NOT_FOUND');
    assert.equal((await api(author, 'PATCH', `/api/messages/${original}`, { message: 'Shorter now' })).statusCode, 200);
    assert.equal((await read(reply))?.replyTo?.excerpt, 'Shorter now');
    assert.equal((await api(author, 'DELETE', `/api/messages/${original}`)).statusCode, 204);
    assert.deepEqual((await read(reply))?.replyTo, { id: original, userId: author.userId, excerpt: null, kind: 'DELETED' });

    const secret = await makeRoom(t, author, { type: 'E2EE', members: [member] });
    const cipher = Buffer.alloc(40, 9).toString('base64');
    const encrypted = await postMessage(t, author, secret.id, cipher);
    const encryptedReply = await postMessage(t, member, secret.id, Buffer.alloc(40, 3).toString('base64'), { replyToId: encrypted });
    const items = (await api(member, 'GET', `/api/messages/${secret.id}`)).json().items as { id: string; replyTo: { kind: string; excerpt: string | null } | null }[];
    assert.deepEqual(items.find((m) => m.id === encryptedReply)?.replyTo, { id: encrypted, userId: author.userId, excerpt: null, kind: 'ENCRYPTED' });
    assert.equal((await api(author, 'PATCH', `/api/messages/${encrypted}`, { message: 'plain text' })).json().code, 'MESSAGE_NOT_ENCRYPTED');
    assert.equal((await api(author, 'PATCH', `/api/messages/${encrypted}`, { message: Buffer.alloc(44, 5).toString('base64') })).statusCode, 200);
  });

  it('reactions: one emoji each, at most 3 different per member, counted with the caller\'s own marked; sockets told; the author told (pushed when offline, collapsed per message); strangers and turned-off rooms refused', async () => {
    const [author, member, other, stranger] = await Promise.all([makeUser(t), makeUser(t), makeUser(t), makeUser(t)]);
    const room = await makeRoom(t, author, { members: [member, other] });
    const token = `fcm-react-${author.deviceId}`;
    assert.equal((await api(author, 'PUT', '/api/devices/push-token', { token, provider: 'FCM' })).statusCode, 204);
    const messageId = await postMessage(t, author, room.id, 'React to me');
    const onMember = new DeviceClient(member.accessToken);
    clients.push(onMember);
    await onMember.connect(hubs[1]!.port);
    const counts: unknown[] = [];
    onMember.socket!.on('message.reactions', (payload: { messageId: string; reactions: unknown }) => payload.messageId === messageId && counts.push(payload.reactions));
    const react = (s: Session, emoji: string, method: 'PUT' | 'DELETE' = 'PUT') => api(s, method, `/api/messages/${messageId}/reactions/${encodeURIComponent(emoji)}`);

    for (const emoji of ['👍', '🇩🇪', '👨‍👩‍👧']) assert.equal((await react(member, emoji)).statusCode, 204, emoji);
    assert.equal((await react(member, '👍')).statusCode, 204, 'again: nothing changes');
    const fourth = await react(member, '🎉');
    assert.equal(fourth.statusCode, 400);
    assert.equal(fourth.json().code, 'TOO_MANY_REACTIONS');
    for (const bad of ['a', '👍👍', ':)']) assert.equal((await react(other, bad)).json().code, 'EMOJI_INVALID', bad);
    assert.equal((await react(other, '👍')).statusCode, 204);
    assert.equal((await react(stranger, '👍')).statusCode, 400, 'a stranger to the room');
    assert.equal((await react(author, '👍')).statusCode, 204, 'the author may react too');

    const seenBy = async (s: Session) => ((await api(s, 'GET', `/api/messages/${room.id}`)).json().items as { id: string; reactions: { emoji: string; count: number; me: boolean }[] }[]).find((m) => m.id === messageId)!.reactions;
    assert.deepEqual((await seenBy(other)).find((r) => r.emoji === '👍'), { emoji: '👍', count: 3, me: true });
    assert.deepEqual((await seenBy(other)).find((r) => r.emoji === '🇩🇪'), { emoji: '🇩🇪', count: 1, me: false });
    assert.equal((await react(member, '🇩🇪', 'DELETE')).statusCode, 204);
    assert.equal((await seenBy(member)).some((r) => r.emoji === '🇩🇪'), false);
    await until(() => counts.length === 6, 'a count on the socket for each change');
    assert.deepEqual(counts.at(-1), [{ emoji: '👍', count: 3 }, { emoji: '👨‍👩‍👧', count: 1 }]);

    // The offline author was pushed for the others' reactions, never their own, one notification per message.
    await until(async () => (await t.db.collection('push_records').countDocuments({ token })) >= 1, 'a reaction push');
    const pushes = await t.db.collection('push_records').find({ token }).toArray();
    assert.ok(pushes.every((push) => push.message.data.event === 'message.reaction' && push.message.collapseId === `reaction-${messageId}`));
    assert.ok(pushes.every((push) => push.message.data.userId !== author.userId), 'pushed for their own reaction');

    const broadcast = await makeRoom(t, author, { type: 'BROADCAST', members: [member] });
    const post = await postMessage(t, author, broadcast.id, 'A post');
    assert.equal((await api(member, 'PUT', `/api/messages/${post}/reactions/${encodeURIComponent('❤️')}`)).statusCode, 204, 'a follower reacts');
    assert.equal((await api(author, 'POST', `/api/rooms/${broadcast.id}?name=${encodeURIComponent(broadcast.name ?? 'Broadcast')}&description=&reactionsEnabled=false`)).json().reactionsEnabled, false);
    assert.equal((await api(member, 'PUT', `/api/messages/${post}/reactions/${encodeURIComponent('👍')}`)).json().code, 'REACTIONS_DISABLED');
  });

  it('read receipts: a member\'s read tells the others\' sockets and lists them for the author; with readReceipts off one neither sends nor sees them', async () => {
    const [author, reader, private_, stranger] = await Promise.all([makeUser(t), makeUser(t), makeUser(t), makeUser(t)]);
    assert.equal((await api(private_, 'PATCH', '/api/users/me', { readReceipts: false })).json().readReceipts, false);
    const room = await makeRoom(t, author, { members: [reader, private_] });
    const sockets = new Map<string, [string, string][]>();
    for (const [s, hub] of [[author, hubs[0]!], [private_, hubs[1]!]] as const) {
      const client = new DeviceClient(s.accessToken);
      clients.push(client);
      await client.connect(hub.port);
      const seen: [string, string][] = [];
      client.socket!.on('room.read', (payload: { roomId: string; userId: string; messageId: string }) => payload.roomId === room.id && seen.push([payload.userId, payload.messageId]));
      client.socket!.on('message.new', (payload: { roomId: string; messageId: string }) => payload.roomId === room.id && seen.push(['message.new', payload.messageId]));
      sockets.set(s.userId, seen);
    }
    const messageId = await postMessage(t, author, room.id, 'Did you read this?');
    assert.equal((await api(private_, 'POST', `/api/rooms/${room.id}/read`)).statusCode, 204);
    assert.equal((await api(reader, 'POST', `/api/rooms/${room.id}/read`, { messageId })).statusCode, 204);
    // A later message is the positive control: what came before it on each socket came in order.
    const later = await postMessage(t, author, room.id, 'And this?');
    for (const seen of sockets.values()) await until(() => seen.some(([kind, id]) => kind === 'message.new' && id === later), 'the later message');
    assert.deepEqual(sockets.get(author.userId)!.filter(([kind]) => kind !== 'message.new'), [[reader.userId, messageId]], 'the author sees the reader, not the member with receipts off');
    assert.deepEqual(sockets.get(private_.userId)!.filter(([kind]) => kind !== 'message.new'), [], 'receipts off: none seen');

    const readers = await api(author, 'GET', `/api/messages/${messageId}/readers`);
    assert.equal(readers.statusCode, 200, readers.body);
    assert.deepEqual((readers.json().readers as { userId: string }[]).map((r) => r.userId), [reader.userId]);
    assert.ok(readers.json().readers[0].readAt);
    assert.equal((await api(reader, 'GET', `/api/messages/${messageId}/readers`)).json().code, 'READ_RECEIPTS_NOT_HERE', 'only for its author');
    assert.equal((await api(stranger, 'GET', `/api/messages/${messageId}/readers`)).statusCode, 400);
    const own = await postMessage(t, private_, room.id, 'Mine');
    assert.equal((await api(private_, 'GET', `/api/messages/${own}/readers`)).json().code, 'READ_RECEIPTS_OFF');
  });

  it('a deletion that died after its tombstone is finished: by the minute clean-up, or by the author\'s retry', async () => {
    const [author, member] = await Promise.all([makeUser(t), makeUser(t)]);
    const room = await makeRoom(t, author, { members: [member] });
    /** A message with an earlier version and a reply quoting it, "deleted" by a process that died right after the tombstone. */
    const halfDeleted = async (text: string) => {
      const id = await postMessage(t, author, room.id, `${text} first`);
      assert.equal((await api(author, 'PATCH', `/api/messages/${id}`, { message: text })).statusCode, 200);
      const reply = await postMessage(t, member, room.id, 'Quoting it', { replyToId: id });
      await t.ctx.repos.messageRemovals.begin(id, new Date());
      await t.ctx.repos.messages.tombstone(id, new Date());
      return { id, reply };
    };
    const leftOver = async ({ id, reply }: { id: string; reply: string }) => ({
      edits: await t.db.collection('message_edits').countDocuments({ messageId: id }),
      excerpt: ((await t.db.collection('messages').findOne({ _id: reply as never })) as { replyTo?: { kind: string } } | null)?.replyTo?.kind,
      pending: await t.db.collection('message_removals').countDocuments({ _id: id as never }),
    });
    const swept = await halfDeleted('Swept');
    assert.deepEqual(await leftOver(swept), { edits: 1, excerpt: 'TEXT', pending: 1 }, 'the follow-ups were never done');
    // The minute clean-up a minute later finishes it.
    const cleaned = await t.ctx.services.maintenance.cleanupExpired(new Date(Date.now() + 120_000));
    assert.ok(cleaned.unfinishedDeletions >= 1);
    assert.deepEqual(await leftOver(swept), { edits: 0, excerpt: 'DELETED', pending: 0 });
    // The author's retry answers as for a deleted message, and finishes it too.
    const retried = await halfDeleted('Retried');
    const again = await api(author, 'DELETE', `/api/messages/${retried.id}?scope=everyone`);
    assert.equal(again.json().code, 'MESSAGE_DELETED');
    assert.deepEqual(await leftOver(retried), { edits: 0, excerpt: 'DELETED', pending: 0 });
    // A deletion of long ago leaves no row behind when asked again.
    assert.equal((await api(author, 'DELETE', `/api/messages/${retried.id}?scope=everyone`)).json().code, 'MESSAGE_DELETED');
    assert.equal(await t.db.collection('message_removals').countDocuments({ _id: retried.id as never }), 0);
  });

  it('a deleted message\'s push is replaced, under the same collapse key, by one saying so', async () => {
    const [author, member] = await Promise.all([makeUser(t), makeUser(t)]);
    const token = `fcm-deleted-${member.deviceId}`;
    assert.equal((await api(member, 'PUT', '/api/devices/push-token', { token, provider: 'FCM' })).statusCode, 204);
    const room = await makeRoom(t, author, { members: [member] });
    const messageId = await postMessage(t, author, room.id, 'Oops, wrong room');
    const pushesOf = () => t.db.collection('push_records').find({ token }).sort({ at: 1 }).toArray();
    await until(async () => (await pushesOf()).length === 1, 'the message\'s push');
    assert.equal((await api(author, 'DELETE', `/api/messages/${messageId}`)).statusCode, 204);
    await until(async () => (await pushesOf()).length === 2, 'the replacement push');
    const [shown, replacement] = await pushesOf();
    assert.match(shown!.message.alert.body, /Oops, wrong room/);
    assert.match(replacement!.message.alert.body, /This message was deleted/);
    assert.equal(replacement!.message.collapseId, shown!.message.collapseId, 'the same collapse key');
    assert.equal(replacement!.message.data.messageId, messageId);
  });
});
