import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Workers } from '../../workers/main.js';
import { recordedPush, signIn, startTestApp, startTestWorkers, type Session, type TestApp } from '../helpers/app.js';
import { connect, httpAs, postMessage } from '../helpers/factories.js';
import { DeviceClient, spawnHub, type HubProcess } from '../helpers/hubs.js';
import { until } from '../helpers/wait.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Who can reach whom (issue 32): invitations instead of memberships, the roomInvites setting, presence, calls, apps. */
describe('room invitations: a stranger cannot pull a member into a room', () => {
  let t: TestApp;
  let workers: Workers;
  const hubs: HubProcess[] = [];
  const clients: DeviceClient[] = [];
  const api = httpAs(() => t);

  before(async () => {
    t = await startTestApp({ WEBHOOK_ALLOW_PRIVATE: 'true' });
    workers = await startTestWorkers(t);
    hubs.push(await spawnHub(t.config), await spawnHub(t.config));
  });
  after(async () => {
    for (const c of clients) c.close();
    await Promise.all(hubs.map((hub) => hub.kill('SIGKILL')));
    await workers.close();
    await t.close();
  });

  const socketOf = async (s: Session, hub: number) => {
    const client = new DeviceClient(s.accessToken);
    clients.push(client);
    await client.connect(hubs[hub]!.port);
    return client;
  };
  const presenceOf = async (viewer: Session, user: Session) => (await api(viewer, 'GET', `/api/presence?userIds=${user.userId}`)).json() as unknown[];
  const ring = (caller: Session, callee: Session) => api(caller, 'POST', '/api/calls', { calleeId: callee.userId, media: 'AUDIO' });
  const createGroup = (s: Session, memberIds: string[], type = 'PRIVATE_GROUP') => api(s, 'POST', '/api/rooms', { type, name: `Group ${Math.random().toString(36).slice(2, 8)}`, memberIds });
  const myInvitations = async (s: Session) => (await api(s, 'GET', '/api/rooms/invitations')).json() as { items: { room: { id: string }; inviter: { id: string }; status: string }[]; totalItems: number };

  it('B invites A: A sees nothing of the room, B sees no presence of A and cannot ring A, until A accepts', async () => {
    const [a, b] = [await signIn(t), await signIn(t)];
    const onA = await socketOf(a, 0);
    const onB = await socketOf(b, 1);

    const created = await createGroup(b, [a.userId]);
    assert.equal(created.statusCode, 200, created.body);
    const room = created.json();
    assert.equal(room.memberCount, 1, 'A is not a member yet');

    // A's devices are told, and A finds it among their invitations.
    await onA.until((r) => r.some((e) => e.event === 'room.invitation' && e.data.roomId === room.id));
    const invitation = onA.received.find((e) => e.event === 'room.invitation')!;
    assert.deepEqual(invitation.data.inviter, { id: b.userId, displayName: null });
    assert.equal(invitation.data.roomType, 'PRIVATE_GROUP');
    const listed = await myInvitations(a);
    assert.equal(listed.totalItems, 1);
    assert.deepEqual([listed.items[0]!.room.id, listed.items[0]!.inviter.id, listed.items[0]!.status], [room.id, b.userId, 'PENDING']);
    // The room's managers see it pending.
    const pendingOfRoom = (await api(b, 'GET', `/api/rooms/${room.id}/invitations`)).json();
    assert.equal(pendingOfRoom.items[0].invitee.id, a.userId);
    assert.equal((await api(a, 'GET', `/api/rooms/${room.id}/invitations`)).json().code, 'ROOM_NOT_ALLOWED');

    // Nothing of the room reaches A: no messages live, none to read, not in A's rooms, no room.
    const seen: string[] = [];
    onA.socket!.on('message.new', (payload: { messageId: string }) => seen.push(payload.messageId));
    const before = await postMessage(t, b, room.id, 'hello stranger');
    assert.equal((await api(a, 'GET', `/api/messages/${room.id}`)).statusCode, 400);
    assert.equal((await api(a, 'GET', `/api/rooms/${room.id}`)).statusCode, 400);
    assert.equal((await api(a, 'GET', '/api/rooms')).json().totalItems, 0);
    // No presence of A for B, and B cannot ring A.
    assert.deepEqual(await presenceOf(b, a), []);
    assert.equal((await ring(b, a)).statusCode, 400);

    const accepted = await api(a, 'POST', `/api/rooms/${room.id}/invitation?accept=true`);
    assert.equal(accepted.statusCode, 200, accepted.body);
    assert.equal(accepted.json().status, 'ACCEPTED');
    await onB.until((r) => r.some((e) => e.event === 'room.invitation-accepted' && e.data.roomId === room.id && (e.data.user as { id: string }).id === a.userId));
    assert.equal((await api(a, 'POST', `/api/rooms/${room.id}/invitation?accept=true`)).json().code, 'INVITATION_NOT_FOUND');

    // A is a member now: history, live posts, presence, calls.
    const history = (await api(a, 'GET', `/api/messages/${room.id}`)).json();
    assert.ok(JSON.stringify(history).includes(before));
    await until(async () => {
      const id = await postMessage(t, b, room.id, 'welcome');
      await sleep(200);
      return seen.includes(id);
    }, 'a live post reaching A after accepting');
    assert.equal(seen.includes(before), false, 'the post made before A accepted never reached A live');
    assert.equal((await presenceOf(b, a)).length, 1);
    const rang = await ring(b, a);
    assert.equal(rang.statusCode, 200, rang.body);
    assert.equal((await api(b, 'POST', `/api/calls/${rang.json().id}/end`)).statusCode, 200);
  });

  it('A declines with a block: B can neither invite A again nor call A; the block answer does not say who blocked', async () => {
    const [a, b] = [await signIn(t), await signIn(t)];
    const room = (await createGroup(b, [a.userId])).json();
    const declined = await api(a, 'POST', `/api/rooms/${room.id}/invitation?accept=false&block=true&reason=SPAM`);
    assert.equal(declined.statusCode, 200, declined.body);
    assert.deepEqual([declined.json().status, declined.json().declineReason], ['DECLINED', 'SPAM']);
    const blocks = (await api(a, 'GET', '/api/users/blocks')).json();
    assert.deepEqual([blocks.items[0].blockedUser.id, blocks.items[0].reason], [b.userId, 'SPAM']);

    for (const attempt of [createGroup(b, [a.userId]), api(b, 'POST', '/api/rooms', { type: 'DIRECT', memberIds: [a.userId] }), api(b, 'POST', `/api/rooms/${room.id}/members/${a.userId}`)]) {
      const res = await attempt;
      assert.equal(res.statusCode, 400);
      assert.equal(res.json().code, 'BLOCKED');
      assert.equal(res.json().message, 'A block between you and this user prevents it');
    }
    // The other way round reads the same.
    assert.equal((await createGroup(a, [b.userId])).json().code, 'BLOCKED');
    assert.equal((await ring(b, a)).statusCode, 400);
    assert.equal((await myInvitations(a)).totalItems, 0);
  });

  it('declined without a block: the room cannot ask again; accepting and blocking at once is refused', async () => {
    const [a, b] = [await signIn(t), await signIn(t)];
    const room = (await createGroup(b, [a.userId])).json();
    assert.equal((await api(a, 'POST', `/api/rooms/${room.id}/invitation?accept=true&block=true`)).json().code, 'ACCEPT_WITH_BLOCK');
    assert.equal((await api(a, 'POST', `/api/rooms/${room.id}/invitation?accept=false`)).statusCode, 200);
    assert.equal((await api(b, 'POST', `/api/rooms/${room.id}/members/${a.userId}`)).json().code, 'INVITATION_DECLINED');
    assert.equal((await api(a, 'POST', `/api/rooms/${room.id}/invitation?accept=true`)).json().code, 'INVITATION_NOT_FOUND');
  });

  it('connections are added at once; an admin adding a non-connection invites (202), and may withdraw it', async () => {
    const [owner, friend, stranger] = [await signIn(t), await signIn(t), await signIn(t)];
    await connect(t, owner, friend);
    const room = (await createGroup(owner, [friend.userId])).json();
    assert.equal(room.memberCount, 2);
    assert.equal((await myInvitations(friend)).totalItems, 0);

    const invited = await api(owner, 'POST', `/api/rooms/${room.id}/members/${stranger.userId}`);
    assert.equal(invited.statusCode, 202, invited.body);
    assert.deepEqual([invited.json().invitee.id, invited.json().status], [stranger.userId, 'PENDING']);
    // Asking again while it is pending changes nothing.
    assert.equal((await api(owner, 'POST', `/api/rooms/${room.id}/members/${stranger.userId}`)).statusCode, 202);
    assert.equal((await myInvitations(stranger)).totalItems, 1);
    // A member who is neither inviter nor admin cannot withdraw it; the inviter can.
    assert.equal((await api(friend, 'DELETE', `/api/rooms/${room.id}/invitations/${stranger.userId}`)).json().code, 'ROOM_NOT_ALLOWED');
    assert.equal((await api(owner, 'DELETE', `/api/rooms/${room.id}/invitations/${stranger.userId}`)).statusCode, 204);
    assert.equal((await myInvitations(stranger)).totalItems, 0);
    assert.equal((await api(stranger, 'POST', `/api/rooms/${room.id}/invitation?accept=true`)).json().code, 'INVITATION_NOT_FOUND');
    assert.equal((await api(owner, 'DELETE', `/api/rooms/${room.id}/invitations/${stranger.userId}`)).json().code, 'INVITATION_NOT_FOUND');
    // A withdrawn invitation may be made again; an existing member answers 204 as before.
    assert.equal((await api(owner, 'POST', `/api/rooms/${room.id}/members/${stranger.userId}`)).statusCode, 202);
    assert.equal((await api(owner, 'POST', `/api/rooms/${room.id}/members/${friend.userId}`)).statusCode, 204);
  });

  it('a direct chat with a non-connection is a message request: the recipient accepts first', async () => {
    const [a, b] = [await signIn(t), await signIn(t)];
    const direct = (await api(b, 'POST', '/api/rooms', { type: 'DIRECT', memberIds: [a.userId] })).json();
    assert.equal(direct.memberCount, 1);
    await postMessage(t, b, direct.id, 'can we talk?');
    assert.equal((await api(a, 'GET', `/api/messages/${direct.id}`)).statusCode, 400);
    assert.deepEqual(await presenceOf(b, a), []);
    const request = (await myInvitations(a)).items[0]!;
    assert.equal(request.room.id, direct.id);
    assert.equal((await api(a, 'POST', `/api/rooms/${direct.id}/invitation?accept=true`)).statusCode, 200);
    const read = (await api(a, 'GET', `/api/messages/${direct.id}`)).json();
    assert.ok(JSON.stringify(read).includes('can we talk?'));
  });

  it('an offline invitee is pushed the invitation', async () => {
    const [a, b] = [await signIn(t), await signIn(t)];
    const token = `fcm-invite-${a.deviceId}`;
    assert.equal((await api(a, 'PUT', '/api/devices/push-token', { token, provider: 'FCM' })).statusCode, 204);
    const room = (await createGroup(b, [a.userId])).json();
    const push = await recordedPush(t, { token }, 10_000);
    assert.ok(push, 'the offline invitee got no push');
    assert.equal(push.message.data.event, 'room.invitation');
    assert.equal(push.message.data.roomId, room.id);
    assert.equal(push.message.alert.title, 'Room invitation');
  });

  it('roomInvites: connections and nobody refuse strangers; nobody lets in only connections\' direct chats', async () => {
    const [a, friend, stranger] = [await signIn(t), await signIn(t), await signIn(t)];
    await connect(t, a, friend);
    assert.equal((await api(a, 'GET', '/api/users/me')).json().roomInvites, 'everyone');
    assert.equal((await api(a, 'PATCH', '/api/users/me', { roomInvites: 'sometimes' })).statusCode, 400);

    assert.equal((await api(a, 'PATCH', '/api/users/me', { roomInvites: 'connections' })).json().roomInvites, 'connections');
    const refused = await createGroup(stranger, [a.userId]);
    assert.deepEqual([refused.statusCode, refused.json().code], [400, 'ROOM_INVITES_REFUSED']);
    assert.equal((await api(stranger, 'POST', '/api/rooms', { type: 'DIRECT', memberIds: [a.userId] })).json().code, 'ROOM_INVITES_REFUSED');
    // Refused whole: nothing was made for the stranger either.
    assert.equal((await api(stranger, 'GET', '/api/rooms')).json().totalItems, 0);
    assert.equal((await createGroup(friend, [a.userId])).json().memberCount, 2);

    assert.equal((await api(a, 'PATCH', '/api/users/me', { roomInvites: 'nobody' })).json().roomInvites, 'nobody');
    assert.equal((await createGroup(friend, [a.userId])).json().code, 'ROOM_INVITES_REFUSED');
    assert.equal((await createGroup(stranger, [a.userId])).json().code, 'ROOM_INVITES_REFUSED');
    const direct = await api(friend, 'POST', '/api/rooms', { type: 'DIRECT', memberIds: [a.userId] });
    assert.equal(direct.statusCode, 200, direct.body);
    assert.equal(direct.json().memberCount, 2);
    assert.equal((await myInvitations(a)).totalItems, 0);
  });

  it('a block cancels invitations pending between the two', async () => {
    const [a, b] = [await signIn(t), await signIn(t)];
    await createGroup(b, [a.userId]);
    assert.equal((await myInvitations(a)).totalItems, 1);
    assert.equal((await api(b, 'POST', `/api/users/blocks?blockedUserId=${a.userId}`)).statusCode, 200);
    assert.equal((await myInvitations(a)).totalItems, 0);
  });

  it('an app is added to a room only when listed or owned by the adder; another\'s unlisted app reads as missing', async () => {
    const [owner, other] = [await signIn(t), await signIn(t)];
    const app = await api(owner, 'POST', '/api/apps', { name: 'Private helper', webhookUrl: 'http://127.0.0.1:9/hook' });
    assert.equal(app.statusCode, 200, app.body);
    const appId = app.json().id as string;
    const othersRoom = (await createGroup(other, [])).json();
    const refused = await api(other, 'POST', `/api/rooms/${othersRoom.id}/apps/${appId}`);
    const missing = await api(other, 'POST', `/api/rooms/${othersRoom.id}/apps/no-such-app`);
    assert.equal(refused.statusCode, 400);
    assert.deepEqual([refused.json().code, refused.json().message], [missing.json().code, missing.json().message]);
    assert.equal(refused.json().code, 'APP_NOT_FOUND');
    const ownRoom = (await createGroup(owner, [])).json();
    assert.equal((await api(owner, 'POST', `/api/rooms/${ownRoom.id}/apps/${appId}`)).statusCode, 204);
  });
});
