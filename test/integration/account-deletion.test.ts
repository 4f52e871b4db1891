import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Workers } from '../../workers/main.js';
import { bearer, freshPhone, lastCode, signIn, startTestApp, startTestWorkers, type Session, type TestApp } from '../helpers/app.js';
import { deviceKeys, identityRequest } from '../helpers/e2ee.js';
import { connect, httpAs, makeRoom, makeUser, postMessage } from '../helpers/factories.js';
import { DeviceClient, spawnHub, type HubProcess } from '../helpers/hubs.js';
import { spawnRole } from '../helpers/processes.js';
import { fund, walletWith } from '../helpers/wallets.js';
import { freePort } from '../helpers/ports.js';
import { until } from '../helpers/wait.js';
import { totp } from '../helpers/totp.js';
import { startAppServer, type AppServer } from '../helpers/app-server.js';

/** What a phone does to delete its account: ask for the code, read it from the SMS, send it. */
async function deleteAccount(t: TestApp, s: Session, phone: string, body: Record<string, unknown> = {}) {
  const api = httpAs(() => t);
  const sent = await api(s, 'POST', '/api/users/me/deletion/code');
  assert.equal(sent.statusCode, 204, sent.body);
  return api(s, 'DELETE', '/api/users/me', { code: await lastCode(t.outbox, phone), ...body });
}

const deletionOf = (t: TestApp, userId: string) => t.db.collection<{ _id: string; state: string; done: string[] }>('account_deletions').findOne({ _id: userId });

describe('deleting an account (issue 46, item 1)', () => {
  let t: TestApp;
  let workers: Workers;
  let hub: HubProcess;
  const api = httpAs(() => t);
  const clients: DeviceClient[] = [];
  const servers: AppServer[] = [];

  before(async () => {
    t = await startTestApp({ WEBHOOK_ALLOW_PRIVATE: 'true' });
    workers = await startTestWorkers(t);
    hub = await spawnHub(t.config);
  });
  after(async () => {
    for (const client of clients) client.close();
    await Promise.all(servers.map((server) => server.close()));
    await hub?.kill();
    await workers?.close();
    await t?.close();
  });

  it('signs out every device at once, frees the number, shows a deleted author, and erases the rest in the background', async () => {
    const phone = freshPhone();
    const user = await signIn(t, phone);
    const second = await signIn(t, phone, { name: 'Tablet', platform: 'ANDROID' });
    const [friend, stranger, blocked] = await Promise.all([makeUser(t), makeUser(t), makeUser(t)]);
    await connect(t, user, friend);
    assert.equal((await api(user, 'POST', `/api/users/connection-requests?recipientId=${stranger.userId}`)).statusCode, 204);
    assert.equal((await api(user, 'POST', `/api/users/blocks?blockedUserId=${blocked.userId}`)).statusCode, 200);
    const room = await makeRoom(t, user, { members: [friend] });
    const messageId = await postMessage(t, user, room.id, 'Hello from an account about to go');
    const keys = deviceKeys();
    assert.equal((await api(user, 'PUT', '/api/e2ee/identity', identityRequest(user.deviceId, keys))).statusCode, 204);
    const wallet = await api(user, 'POST', '/api/wallets', { currency: 'USDT' });
    assert.equal(wallet.statusCode, 200, wallet.body);
    const appServer = await startAppServer((_call, res) => void res.writeHead(204).end());
    servers.push(appServer);
    const app = await api(user, 'POST', '/api/apps', { name: 'Soon gone', webhookUrl: appServer.url });
    assert.equal(app.statusCode, 200, app.body);
    const appId = app.json().id as string;
    await api(user, 'PUT', '/api/devices/push-token', { token: `fcm-deleting-${user.deviceId}`, provider: 'FCM' });

    const phones = [new DeviceClient(user.accessToken), new DeviceClient(second.accessToken)];
    clients.push(...phones);
    await Promise.all(phones.map((phoneSocket) => phoneSocket.connect(hub.port)));
    const closed = phones.map((phoneSocket) => phoneSocket.disconnected());

    const started = Date.now();
    const res = await deleteAccount(t, user, phone);
    assert.equal(res.statusCode, 204, res.body);
    // At once: both sockets closed, both devices' tokens refused, the number free.
    assert.deepEqual(await Promise.all(closed), ['io server disconnect', 'io server disconnect']);
    assert.ok(Date.now() - started < 1_000 + 500, `the sockets closed ${Date.now() - started} ms after the answer`);
    for (const session of [user, second]) assert.equal((await t.app.inject({ url: '/api/users/me', headers: bearer(session.accessToken) })).statusCode, 401);
    const refreshed = await t.app.inject({ method: 'POST', url: '/api/auth/refresh', payload: { refreshToken: user.refreshToken } });
    assert.equal(refreshed.statusCode, 401);

    // The others see a deleted account, its message still in the room.
    const seen = (await api(friend, 'GET', `/api/users/${user.userId}`)).json();
    assert.deepEqual(seen, { id: user.userId, deleted: true, displayName: null, avatarUrl: null, avatarThumbnailUrl: null });
    const messages = (await api(friend, 'GET', `/api/messages/${room.id}`)).json() as { items: { id: string; userId: string; message: string }[] };
    const kept = messages.items.find((m) => m.id === messageId);
    assert.equal(kept?.userId, user.userId);
    assert.equal(kept?.message, 'Hello from an account about to go');
    // Nobody can reach it: a connection request or a call to it is to an unknown user.
    assert.equal((await api(stranger, 'POST', `/api/users/connection-requests?recipientId=${user.userId}`)).statusCode, 401);

    // The background erasure finishes.
    await until(async () => (await deletionOf(t, user.userId))?.state === 'ERASED', 'the account erased', 15_000);
    const friendConnections = (await api(friend, 'GET', '/api/users/connections')).json() as { items: { user: { id: string } }[] };
    assert.ok(!friendConnections.items.some((c) => c.user.id === user.userId), 'the connection stayed');
    assert.equal(await t.db.collection('connection_requests').countDocuments({ $or: [{ senderId: user.userId }, { recipientId: user.userId }] }), 0);
    assert.equal(await t.db.collection('blocks').countDocuments({ blockerId: user.userId }), 0);
    const roomNow = (await api(friend, 'GET', '/api/rooms')).json() as { items: { id: string; creatorId?: string }[] };
    assert.ok(roomNow.items.some((r) => r.id === room.id), 'the room stays for the friend');
    assert.equal((await t.db.collection('rooms').findOne({ _id: room.id as never }))?.creatorId, friend.userId, 'the room passed to its longest-standing member');
    assert.equal(await t.db.collection('room_members').countDocuments({ userId: user.userId, active: true }), 0);
    assert.equal((await t.db.collection('e2ee_identities').findOne({ _id: user.deviceId as never }))?.revoked, true);
    const appDoc = await t.db.collection('apps').findOne({ _id: appId as never });
    assert.ok(appDoc?.removedAt, 'the app was not removed');
    assert.ok((await t.db.collection('ledger_accounts').findOne({ _id: wallet.json().id }))?.closedAt, 'the wallet was not closed');
    const userDoc = await t.db.collection('users').findOne({ _id: user.userId as never });
    assert.equal(userDoc?.displayName, null);
    assert.equal(userDoc?.phone, `deleted:${user.userId}`);
    assert.equal(await t.db.collection('devices').countDocuments({ userId: user.userId, pushToken: { $ne: null } }), 0);

    // The number makes a new, empty account.
    const again = await signIn(t, phone);
    assert.notEqual(again.userId, user.userId);
    assert.deepEqual((await api(again, 'GET', '/api/rooms')).json().items, []);
    assert.deepEqual((await api(again, 'GET', '/api/users/connections')).json().items, []);
    assert.deepEqual((await api(again, 'GET', '/api/wallets')).json(), []);
  });

  it('is refused while a wallet holds money, naming it, and changes nothing', async () => {
    const phone = freshPhone();
    const user = await signIn(t, phone);
    const walletId = await walletWith(t, user, 'USDT', 2_500_000n);
    const refused = await deleteAccount(t, user, phone);
    assert.equal(refused.statusCode, 400);
    assert.equal(refused.json().code, 'ACCOUNT_HOLDS_MONEY');
    assert.match(refused.json().message, new RegExp(`wallet ${walletId} holds 2.5 USDT`));
    assert.equal((await api(user, 'GET', '/api/users/me')).statusCode, 200);
    assert.equal((await t.db.collection('ledger_accounts').findOne({ _id: walletId as never }))?.closedAt ?? null, null);
    assert.equal(await deletionOf(t, user.userId), null);
  });

  it('takes the texted code once and, with two-factor on, the authenticator code; a wrong one changes nothing and leaves the texted code usable', async () => {
    const phone = freshPhone();
    const user = await signIn(t, phone);
    const wrong = await api(user, 'DELETE', '/api/users/me', { code: '000000' });
    assert.equal(wrong.statusCode, 400);
    assert.equal(wrong.json().code, 'DELETION_CODE_INVALID');
    const setup = (await api(user, 'POST', '/api/users/2fa/setup')).json() as { secret: string };
    assert.equal((await api(user, 'POST', `/api/users/2fa/enable?code=${totp(setup.secret, Date.now())}`)).statusCode, 200);
    const withoutTotp = await deleteAccount(t, user, phone);
    assert.equal(withoutTotp.statusCode, 400);
    assert.equal(withoutTotp.json().code, 'TWO_FACTOR_CODE_INVALID');
    assert.equal((await api(user, 'GET', '/api/users/me')).statusCode, 200, 'still signed in');
    // A refusal after the texted code was checked does not use it up: the same code, with the authenticator's next code.
    const next = totp(setup.secret, Date.now() + 30_000);
    const done = await api(user, 'DELETE', '/api/users/me', { code: await lastCode(t.outbox, phone), twoFactorCode: next });
    assert.equal(done.statusCode, 204, done.body);
    // And used once: the same code again is refused (the account is gone: 401 before anything).
    assert.notEqual((await api(user, 'DELETE', '/api/users/me', { code: await lastCode(t.outbox, phone), twoFactorCode: next })).statusCode, 204);
  });

  it('with eraseMessages, what the account wrote is emptied where it stands', async () => {
    const phone = freshPhone();
    const user = await signIn(t, phone);
    const friend = await makeUser(t);
    const room = await makeRoom(t, user, { members: [friend] });
    const messageId = await postMessage(t, user, room.id, 'Erase me first');
    // An earlier version, and a friend's reply quoting it: both hold the words too.
    assert.equal((await api(user, 'PATCH', `/api/messages/${messageId}`, { message: 'Erase me' })).statusCode, 200);
    assert.equal(await t.db.collection('message_edits').countDocuments({ messageId }), 1);
    const reply = await postMessage(t, friend, room.id, 'Keep me', { replyToId: messageId });
    const friendsOwn = reply;
    assert.equal((await deleteAccount(t, user, phone, { eraseMessages: true })).statusCode, 204);
    await until(async () => (await deletionOf(t, user.userId))?.state === 'ERASED', 'the account erased', 15_000);
    const items = (await api(friend, 'GET', `/api/messages/${room.id}`)).json().items as { id: string; message: string; replyTo?: { excerpt: string | null; kind: string } | null }[];
    assert.equal(items.find((m) => m.id === messageId)?.message, '');
    const kept = items.find((m) => m.id === friendsOwn);
    assert.equal(kept?.message, 'Keep me');
    assert.deepEqual([kept?.replyTo?.excerpt, kept?.replyTo?.kind], [null, 'DELETED'], 'the reply no longer quotes the erased words');
    assert.equal(await t.db.collection('message_edits').countDocuments({ messageId }), 0, 'no earlier version left');
    const everything = JSON.stringify(await t.db.collection('messages').find({ roomId: room.id }).toArray());
    assert.ok(!everything.includes('Erase me'), 'the words are nowhere in the room\'s messages');
  });

  it('after erasure (eraseMessages), no collection holds the person: their id only where the personal-data table says why, their number, name, e-mail and words nowhere', async () => {
    const phone = freshPhone();
    const user = await signIn(t, phone);
    const name = 'Quillon Zaveridge';
    const words = 'xylophonic marmalade';
    assert.equal((await api(user, 'PATCH', '/api/users/me', { displayName: name })).statusCode, 200);
    const [friend, stranger, blocked] = await Promise.all([makeUser(t), makeUser(t), makeUser(t)]);
    await connect(t, user, friend);
    assert.equal((await api(user, 'POST', `/api/users/connection-requests?recipientId=${stranger.userId}`, { customMessage: `Hi, ${words}` })).statusCode, 204);
    assert.equal((await api(user, 'POST', `/api/users/blocks?blockedUserId=${blocked.userId}`)).statusCode, 200);
    const room = await makeRoom(t, user, { members: [friend] });
    const messageId = await postMessage(t, user, room.id, `First ${words}`);
    assert.equal((await api(user, 'PATCH', `/api/messages/${messageId}`, { message: `Then ${words}` })).statusCode, 200);
    await postMessage(t, friend, room.id, 'A reply', { replyToId: messageId });
    assert.equal((await api(user, 'PUT', `/api/messages/${messageId}/reactions/${encodeURIComponent('👍')}`)).statusCode, 204);
    assert.equal((await api(user, 'POST', `/api/rooms/${room.id}/read`)).statusCode, 204);
    assert.equal((await api(user, 'PUT', '/api/e2ee/identity', identityRequest(user.deviceId, deviceKeys()))).statusCode, 204);
    assert.equal((await api(user, 'POST', '/api/wallets', { currency: 'USDT' })).statusCode, 200);
    await api(user, 'PUT', '/api/devices/push-token', { token: `fcm-walk-${user.deviceId}`, provider: 'FCM' });
    assert.equal((await api(user, 'POST', '/api/reports', { targetType: 'USER', targetId: stranger.userId, reason: 'SPAM', comment: `About ${words}` })).statusCode, 200);
    await postMessage(t, friend, room.id, 'Something the user is pushed and reads');

    assert.equal((await deleteAccount(t, user, phone, { eraseMessages: true })).statusCode, 204);
    await until(async () => (await deletionOf(t, user.userId))?.state === 'ERASED', 'the account erased', 15_000);

    const { PERSONAL_DATA } = await import('../../src/personal-data.js');
    const declared = new Map(PERSONAL_DATA.filter((entry) => entry.collection).map((entry) => [entry.collection!, entry]));
    const content = [phone, name, 'xylophonic', 'marmalade'];
    const ids = [user.userId, user.deviceId];
    const found: string[] = [];
    for (const { name: collection } of await t.db.listCollections().toArray()) {
      const docs = await t.db.collection(collection).find({}).toArray();
      const texts = docs.map((doc) => JSON.stringify(doc));
      const withContent = texts.filter((text) => content.some((marker) => text.includes(marker)));
      if (withContent.length > 0) found.push(`${collection}: ${withContent.length} document(s) hold their number, name or words: ${withContent[0]!.slice(0, 300)}`);
      const withId = texts.filter((text) => ids.some((id) => text.includes(id)));
      if (withId.length > 0 && !declared.get(collection)?.keepsId) found.push(`${collection}: ${withId.length} document(s) hold their id, and the table does not say why: ${withId[0]!.slice(0, 300)}`);
    }
    // Redis: a key naming the person (their id or their device's) may stay only while it expires by itself.
    const redis = t.ctx.platform.redis;
    const servers = 'nodes' in redis && typeof redis.nodes === 'function' ? redis.nodes('master') : [redis];
    for (const server of servers) {
      for (const key of await server.keys(`${t.config.REDIS_PREFIX}*`)) {
        if (!ids.some((id) => key.includes(id))) continue;
        const ttl = await server.pttl(key);
        if (ttl < 0) found.push(`Redis ${key} names them and never expires`);
      }
    }
    assert.deepEqual(found, []);
  });
});

describe('deleting an account: a worker killed midway', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp();
  });
  after(() => t?.close());

  it('leaves the deletion ERASING at a step; the sweep finishes it, every step once', async () => {
    const phone = freshPhone();
    const user = await signIn(t, phone);
    const friend = await makeUser(t);
    await connect(t, user, friend);
    await makeRoom(t, user, { members: [friend] });
    // A worker that dies right after the first background step it finishes.
    const worker = await spawnRole('worker', t.config, { CRASH_AT: 'account.erase-step' }, (output) => output.includes('"msg":"workers running"'));
    try {
      assert.equal((await deleteAccount(t, user, phone)).statusCode, 204);
      await until(() => worker.child.exitCode !== null || worker.child.signalCode !== null, 'the worker to die at the crash point', 15_000);
    } finally {
      await worker.kill('SIGKILL');
    }
    const stopped = await deletionOf(t, user.userId);
    assert.equal(stopped?.state, 'ERASING');
    assert.deepEqual(stopped?.done, ['account', 'devices', 'contacts'], 'the worker died after the contacts step');
    assert.equal((await httpAs(() => t)(friend, 'GET', '/api/users/connections')).json().items.length, 0);

    // The sweep (the worker's schedule, every minute) takes a deletion left alone for a minute.
    t.clock.advance(120_000);
    try {
      assert.equal(await t.ctx.services.accounts.sweep(), 1);
    } finally {
      t.clock.advance(-120_000);
    }
    const finished = await deletionOf(t, user.userId);
    assert.equal(finished?.state, 'ERASED');
    assert.deepEqual(finished?.done, ['account', 'devices', 'contacts', 'rooms', 'e2ee', 'apps', 'messages', 'profile']);
    assert.equal(await t.db.collection('room_members').countDocuments({ userId: user.userId, active: true }), 0);
    assert.equal(await t.ctx.services.accounts.sweep(), 0, 'nothing left to sweep');
  });

  /** The deletion sent to an api process that dies at `point` (its request gets no answer). */
  async function deleteOnADyingApi(user: Session, phone: string, point: string): Promise<void> {
    assert.equal((await httpAs(() => t)(user, 'POST', '/api/users/me/deletion/code')).statusCode, 204);
    const code = await lastCode(t.outbox, phone);
    const port = await freePort();
    const api = await spawnRole('api', t.config, { CRASH_AT: point, HTTP_PORT: String(port) }, (output) => output.includes('Chat platform running'));
    try {
      const answer = await fetch(`http://127.0.0.1:${port}/api/users/me`, { method: 'DELETE', headers: { ...bearer(user.accessToken), 'content-type': 'application/json' }, body: JSON.stringify({ code }) }).catch(() => null);
      assert.equal(answer, null, 'no answer: the process died');
      await until(() => api.child.exitCode !== null || api.child.signalCode !== null, 'the api to die at the crash point', 15_000);
    } finally {
      await api.kill('SIGKILL');
    }
  }
  const sweepAfterAMinute = async () => {
    t.clock.advance(120_000);
    try {
      return await t.ctx.services.accounts.sweep();
    } finally {
      t.clock.advance(-120_000);
    }
  };

  it('an api killed after the wallets closed, before the erasure began: the sweep finishes the deletion', async () => {
    const phone = freshPhone();
    const user = await signIn(t, phone);
    await walletWith(t, user, 'USDT', 0n);
    await deleteOnADyingApi(user, phone, 'account.wallets-closed');
    assert.equal((await deletionOf(t, user.userId))?.state, 'CLOSING', 'recorded before anything was done');
    assert.equal(await sweepAfterAMinute(), 1);
    const finished = await deletionOf(t, user.userId);
    assert.deepEqual([finished?.state, finished?.done.length], ['ERASED', 8]);
    assert.equal((await httpAs(() => t)(user, 'GET', '/api/users/me')).statusCode, 401, 'the account is gone');
  });

  it('an api killed before the wallets closed, money arriving meanwhile: the sweep gives the deletion up and the wallets take money again', async () => {
    const phone = freshPhone();
    const user = await signIn(t, phone);
    const walletId = await walletWith(t, user, 'USDT', 0n);
    await deleteOnADyingApi(user, phone, 'account.delete-recorded');
    assert.equal((await deletionOf(t, user.userId))?.state, 'CLOSING');
    await fund(t, walletId, 'USDT', 5_000_000n);
    assert.equal(await sweepAfterAMinute(), 1);
    assert.equal(await deletionOf(t, user.userId), null, 'the deletion given up');
    const me = await httpAs(() => t)(user, 'GET', '/api/users/me');
    assert.equal(me.statusCode, 200, 'the account lives on');
    await fund(t, walletId, 'USDT', 1_000_000n);
    assert.equal((await httpAs(() => t)(user, 'GET', `/api/wallets/${walletId}`)).json().available, '6', 'the wallet takes money');
  });
});
