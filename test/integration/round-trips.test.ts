import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { after, before, describe, it, type TestContext } from 'node:test';
import { startHub, type Hub } from '../../realtime/hub.js';
import { transferSigned } from '../../src/wallets/transfers.service.js';
import { withdrawSigned } from '../../src/wallets/withdrawals.service.js';
import { swapSigned } from '../../src/wallets/swaps.service.js';
import { addressOf, bearer, freshPhone, lastCode, startTestApp, type Session, type TestApp } from '../helpers/app.js';
import { startAppServer, type AppServer } from '../helpers/app-server.js';
import { deviceKeys, identityRequest, keyShare } from '../helpers/e2ee.js';
import { httpAs, makeRoom, makeUser } from '../helpers/factories.js';
import { DeviceClient } from '../helpers/hubs.js';
import { multipart } from '../helpers/multipart.js';
import { countRoundTrips, redisQuiet } from '../helpers/round-trips.js';
import { queuedJobs } from '../helpers/queued.js';
import { QUEUES } from '../../src/platform/queues.js';
import { must } from '../../src/platform/must.js';
import { walletWith, withBiometricKey } from '../helpers/wallets.js';
import { ROUND_TRIP_BUDGETS, type Budget, type HotPath } from '../round-trip-budgets.js';

/**
 * The round-trip budgets (test/round-trip-budgets.ts), checked for every hot path: each operation is
 * made once to warm the caches (as they are under load), then counted, and must make exactly its
 * budget's round trips. Deterministic: nothing is timed.
 */
describe('round trips of the hot paths, within their budgets', () => {
  let t: TestApp;
  let hub: Hub;
  let app: AppServer;
  const api = httpAs(() => t);
  before(async () => {
    // The in-process hub's heartbeat (every third of PRESENCE_TTL) must not fall in a counted window:
    // with an hour's life it beats at its start and then every 20 minutes.
    t = await startTestApp({ WEBHOOK_ALLOW_PRIVATE: 'true', PRESENCE_TTL: '3600' });
    hub = await startHub(t.ctx.platform, t.ctx.services, { host: '127.0.0.1', port: 0, engine: 'ws' });
    app = await startAppServer((_call, res) => {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ type: 'ack', message: 'Done' }));
    });
  });
  after(async () => {
    await app.close();
    await hub.close();
    await t.close();
  });

  /** Counts `operation` (made once before, uncounted, by `warm`) against the path's budget, and tells what it sent. */
  async function measure<T>(context: TestContext, path: HotPath, operation: () => Promise<T>, warm: (() => Promise<unknown>) | null = operation): Promise<T> {
    if (warm) await warm();
    // Authors' read marks still lingering from earlier posts are written before the count.
    await t.ctx.repos.roomActivity.flush();
    // What the warming set going (a hub's reads after a connection) ends before the count begins.
    await redisQuiet();
    const { result, after, ...trips } = await countRoundTrips(t.db.client, operation, { settle: () => t.ctx.repos.roomActivity.flush() });
    context.diagnostic(`${path}: mongo ${trips.mongo.join(', ')} | redis ${trips.redis.join(', ')} | after the answer: mongo ${after.mongo.join(', ')} | redis ${after.redis.join(', ')}`);
    const budget: Budget = ROUND_TRIP_BUDGETS[path];
    const afterBudget = budget.afterAnswer ?? { mongo: 0, redis: 0 };
    // Exactly the budget: a path that got cheaper lowers its budget too, so the table stays the truth.
    assert.equal(trips.mongo.length, budget.mongo, `${path}: ${trips.mongo.length} MongoDB commands, budget ${budget.mongo}: ${trips.mongo.join(', ')}`);
    assert.equal(trips.redis.length, budget.redis, `${path}: ${trips.redis.length} Redis round trips, budget ${budget.redis}: ${trips.redis.join(', ')}`);
    assert.equal(after.mongo.length, afterBudget.mongo, `${path}: ${after.mongo.length} MongoDB commands after the answer, budget ${afterBudget.mongo}: ${after.mongo.join(', ')}`);
    assert.equal(after.redis.length, afterBudget.redis, `${path}: ${after.redis.length} Redis round trips after the answer, budget ${afterBudget.redis}: ${after.redis.join(', ')}`);
    return result;
  }

  /** Runs a post's push job here, as the worker would: the room's push reach is learned. */
  async function learnReach(messageId: string): Promise<void> {
    await t.ctx.services.messagePush.fanOut({ messageId });
  }

  it('messages: post, post as a phone does, comment, read a page, chat status', async (context) => {
    const [owner, member] = await Promise.all([makeUser(t), makeUser(t)]);
    const room = await makeRoom(t, owner, { type: 'PUBLIC_GROUP', members: [member] });
    const updated = await api(owner, 'POST', `/api/rooms/${room.id}?name=Counted&description=&commentsEnabled=true&participantPublishEnabled=true`);
    assert.equal(updated.json().commentsEnabled, true, updated.body);
    const post = (s: Session, headers: Record<string, string> = {}, body: object = {}) => async () => {
      const res = await api(s, 'PUT', `/api/messages/${room.id}`, { roomId: room.id, message: 'Hello there', ...body }, headers);
      assert.equal(res.statusCode, 200, res.body);
      return res.json() as string;
    };
    // The room's push reach learned as the worker learns it, by the first post's job (nobody here has a push token).
    await learnReach(await post(owner)());
    const messageId = await measure(context, 'message post', post(owner));
    await measure(context, 'message post with clientMessageId', () => post(member, {}, { clientMessageId: randomUUID() })());
    await measure(context, 'message post with clientMessageId and Idempotency-Key (a phone)', () => post(member, { 'idempotency-key': randomUUID() }, { clientMessageId: randomUUID() })());
    await measure(context, 'comment', async () => {
      const res = await api(member, 'POST', `/api/messages/${messageId}/comments`, { message: 'Nice' });
      assert.equal(res.statusCode, 200, res.body);
    });
    await measure(context, 'read a page of messages', async () => assert.equal((await api(member, 'GET', `/api/messages/${room.id}`)).statusCode, 200));
    await measure(context, 'message reply', () => post(member, {}, { replyToId: messageId })());
    const edit = (id: string, text: string) => async () => assert.equal((await api(owner, 'PATCH', `/api/messages/${id}`, { message: text })).statusCode, 200);
    await measure(context, 'message edit', edit(messageId, 'Hello again'), edit(messageId, 'Hello, warm'));
    const [warmDelete, counted] = [await post(owner)(), await post(owner)()];
    const remove = (id: string) => async () => assert.equal((await api(owner, 'DELETE', `/api/messages/${id}`)).statusCode, 204);
    await measure(context, 'message delete', remove(counted), remove(warmDelete));
    const react = (emoji: string) => async () => assert.equal((await api(member, 'PUT', `/api/messages/${messageId}/reactions/${encodeURIComponent(emoji)}`)).statusCode, 204);
    await measure(context, 'message reaction', react('🎉'), react('👍'));
    const unreact = (emoji: string) => async () => assert.equal((await api(member, 'DELETE', `/api/messages/${messageId}/reactions/${encodeURIComponent(emoji)}`)).statusCode, 204);
    await measure(context, 'message reaction taken back', unreact('🎉'), unreact('👍'));
    await measure(context, 'message versions', async () => assert.equal((await api(member, 'GET', `/api/messages/${messageId}/edits`)).statusCode, 200));
    const hide = (id: string) => async () => assert.equal((await api(member, 'DELETE', `/api/messages/${id}?scope=me`)).statusCode, 204);
    await measure(context, 'message hidden for oneself', hide(counted), hide(warmDelete));
    const markRead = async () => assert.equal((await api(member, 'POST', `/api/rooms/${room.id}/read`)).statusCode, 204);
    await measure(context, 'mark a room read (read receipts)', markRead);
    await measure(context, 'message readers', async () => assert.equal((await api(owner, 'GET', `/api/messages/${messageId}/readers`)).statusCode, 200));
    await measure(context, 'chat-status page', async () => assert.equal((await api(member, 'GET', '/api/rooms/status')).statusCode, 200));

    // The job of a post to a member offline with a push token (the local provider records the push).
    assert.equal((await api(member, 'PUT', '/api/devices/push-token', { token: `fcm-counted-${member.deviceId}`, provider: 'FCM' })).statusCode, 204);
    await learnReach(await post(owner)());
    const pushedId = await post(owner)();
    const outcome = await measure(context, 'message push job', () => t.ctx.services.messagePush.fanOut({ messageId: pushedId }), null);
    assert.equal(outcome.sent, 1, 'the member pushed');
  });

  it('sign-in: code request, login, refresh', async (context) => {
    const phone = freshPhone();
    const warmPhone = freshPhone();
    const requestCode = (number: string) => async () => assert.equal((await t.app.inject({ method: 'POST', url: '/api/auth/code', payload: { phone: number }, remoteAddress: addressOf(number) })).statusCode, 204);
    await measure(context, 'sign-in: code request', requestCode(phone), requestCode(warmPhone));
    const login = (number: string, code: string) => async () => {
      const res = await t.app.inject({ method: 'POST', url: '/api/auth/login', payload: { phone: number, code, device: { name: 'Phone', platform: 'IOS' } }, remoteAddress: addressOf(number) });
      assert.equal(res.statusCode, 200, res.body);
      return res.json() as Session;
    };
    // Warmed by another number's login (a code logs in once); the codes are read from the outbox first.
    const warmSession = await login(warmPhone, await lastCode(t.outbox, warmPhone))();
    const session = await measure(context, 'sign-in: login', login(phone, await lastCode(t.outbox, phone)), null);
    const refresh = (s: Session) => async () => assert.equal((await t.app.inject({ method: 'POST', url: '/api/auth/refresh', payload: { refreshToken: s.refreshToken } })).statusCode, 200);
    await measure(context, 'sign-in: refresh', refresh(session), refresh(warmSession));
  });

  it('sockets: connect, and a device event to a connected device', async (context) => {
    const [first, second] = await Promise.all([makeUser(t), makeUser(t)]);
    const clients: DeviceClient[] = [];
    const connect = (s: Session) => async () => {
      const client = new DeviceClient(s.accessToken);
      clients.push(client);
      await client.connect(hub.port);
      // The hub's first reads for the new socket (its inbox state and what it holds) are the connection's.
      await redisQuiet();
      return client;
    };
    try {
      const receiver = await measure(context, 'socket connect', connect(second), connect(first));
      // Counted until the connected socket has the event, so the hub's read of the inbox is always in.
      await measure(context, 'device-event emit', async () => {
        const seq = await t.ctx.events.toDevice(second.deviceId, 'e2ee.rotation-due', { roomId: 'r', reason: 'DEVICE_ADDED' });
        await receiver.until((received) => received.some((event) => event.seq === seq));
      });
    } finally {
      for (const client of clients) client.close();
    }
  });

  it('wallets: transfer, withdrawal request, swap', async (context) => {
    const [alice, bob] = await Promise.all([makeUser(t), makeUser(t)]);
    const [eth, usdt] = [await walletWith(t, alice, 'ETH', 10n ** 18n), await walletWith(t, alice, 'USDT', 0n)];
    await walletWith(t, bob, 'ETH', 0n);
    const key = await withBiometricKey(t, alice);
    const transfer = async () => {
      const item = { requestId: randomUUID(), fromWalletId: eth, toUserId: bob.userId, amount: '0.001' };
      const n = await key.nonce();
      const body = [{ ...item, biometric: { nonce: n, signature: key.signWith(transferSigned(n, item)) } }];
      return async () => {
        const res = await api(alice, 'POST', '/api/wallet-transactions', body);
        assert.equal(res.json()[0]?.status, 'COMPLETED', res.body);
      };
    };
    await measure(context, 'transfer', await transfer(), await transfer());
    const transfers = async (count: number) => {
      const body: object[] = [];
      for (let i = 0; i < count; i++) {
        const item = { requestId: randomUUID(), fromWalletId: eth, toUserId: bob.userId, amount: '0.001' };
        const n = await key.nonce();
        body.push({ ...item, biometric: { nonce: n, signature: key.signWith(transferSigned(n, item)) } });
      }
      return async () => {
        const res = await api(alice, 'POST', '/api/wallet-transactions', body);
        assert.deepEqual((res.json() as { status: string }[]).map((one) => one.status), Array(count).fill('COMPLETED'), res.body);
      };
    };
    await measure(context, 'transfer, 8 items in one request', await transfers(8), await transfers(8));
    const withdrawal = async () => {
      const body = { requestId: randomUUID(), walletId: eth, toAddress: `0x${'3'.repeat(40)}`, amount: '0.001' };
      const n = await key.nonce();
      return async () => assert.equal((await api(alice, 'POST', '/api/wallet-withdrawals', { ...body, biometric: { nonce: n, signature: key.signWith(withdrawSigned(n, body)) } })).statusCode, 200);
    };
    await measure(context, 'withdrawal request', await withdrawal(), await withdrawal());
    const swap = async () => {
      const quote = (await api(alice, 'POST', '/api/wallet-swaps/quote', { fromWalletId: eth, toWalletId: usdt, amount: '0.001' })).json() as { id: string };
      const n = await key.nonce();
      return async () => assert.equal((await api(alice, 'POST', '/api/wallet-swaps', { quoteId: quote.id, biometric: { nonce: n, signature: key.signWith(swapSigned(n, quote.id)) } })).statusCode, 200);
    };
    await measure(context, 'swap', await swap(), await swap());
  });

  it('apps: an invocation, a queued webhook delivery', async (context) => {
    const owner = await makeUser(t);
    const created = (await api(owner, 'POST', '/api/apps', { name: 'Counter', webhookUrl: app.url })).json() as { id: string };
    const uploaded = await api(owner, 'PUT', `/api/apps/${created.id}/manifest`, { version: '1.0.0', scopes: [], commands: [{ id: 'hello', title: 'Hello' }], flows: [], templates: [] });
    assert.equal(uploaded.statusCode, 200, uploaded.body);
    const installed = await api(owner, 'POST', `/api/apps/${created.id}/install`);
    assert.equal(installed.statusCode, 200, installed.body);
    const invoke = async () => {
      const res = await api(owner, 'POST', `/api/apps/${created.id}/invocations`, { command: 'hello' });
      assert.equal(res.json().outcome, 'ack', res.body);
    };
    await measure(context, 'invocation', invoke);
    const webhooks = t.ctx.services.appWebhooks;
    const delivery = async () => {
      const deliveryId = await webhooks.enqueue(created.id, 'payment.completed', { type: 'payment.completed', id: randomUUID() }, { retry: true });
      // The job as queued (no worker runs here): its first attempt, the body sealed in it.
      const [job] = await queuedJobs(t, QUEUES.webhooks, [`${deliveryId}-0-0`]);
      return async () => assert.equal((await webhooks.deliver(must(job, 'the queued job').data)).status, 'DELIVERED');
    };
    await measure(context, 'webhook delivery', await delivery(), await delivery());
  });

  it('uploads: a key share, an attachment', async (context) => {
    const s = await makeUser(t);
    const keys = deviceKeys();
    assert.equal((await api(s, 'PUT', '/api/e2ee/identity', identityRequest(s.deviceId, keys))).statusCode, 204);
    const room = await makeRoom(t, s, { type: 'E2EE' });
    const me = { deviceId: s.deviceId, keys };
    let version = 0;
    const upload = async () => {
      version++;
      const res = await api(s, 'POST', `/api/e2ee/rooms/${room.id}/keys`, { version, create: true, shares: [keyShare(keys, room.id, version, me, randomBytes(32))] });
      assert.equal(res.statusCode, 204, res.body);
    };
    await measure(context, 'key-share upload', upload);
    const plain = await makeRoom(t, s);
    const first = await api(s, 'PUT', `/api/messages/${plain.id}`, { roomId: plain.id, message: 'Files follow' });
    await learnReach(first.json());
    const attach = async () => {
      const body = multipart([{ filename: 'notes.txt', content: Buffer.from('some notes') }]);
      const res = await t.app.inject({ method: 'POST', url: `/api/messages/${plain.id}/attachments`, headers: { ...bearer(s.accessToken), ...body.headers }, payload: body.payload });
      assert.equal(res.statusCode, 204, res.body);
    };
    await measure(context, 'attachment upload', attach);
  });
});
