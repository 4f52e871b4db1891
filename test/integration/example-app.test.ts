import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { startTestApp, startTestWorkers, type TestApp } from '../helpers/app.js';
import { httpAs, makeRoom, makeUser } from '../helpers/factories.js';
import { walletWith } from '../helpers/wallets.js';
import type { Workers } from '../../workers/main.js';
import { BotClient, MemoryReplayStore, PaymentsClient, replayKeyOf, ServiceApiError, verifySessionToken, verifyWebhook } from '../../packages/app-sdk/src/index.js';
import { pizzaManifest, startPizzaApp, type PizzaApp } from '../../examples/pizza-app.js';

/** The example app (examples/pizza-app.ts, on the SDK) against the service, over real HTTP both ways. */
describe('the example app on the app SDK', () => {
  let t: TestApp;
  let workers: Workers;
  let shop: PizzaApp;
  let secrets: string[] = [];
  let baseUrl: string;
  const api = httpAs(() => t);
  before(async () => {
    t = await startTestApp({ WEBHOOK_ALLOW_PRIVATE: 'true' });
    workers = await startTestWorkers(t);
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    baseUrl = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
    shop = await startPizzaApp({ secrets: () => secrets });
  });
  after(async () => {
    await shop.close();
    await workers.close();
    await t.close();
  });

  it('orders through a two-step form, posts a card whose Pay button another member taps and pays, and refunds through the SDK', async () => {
    const [owner, member] = await Promise.all([makeUser(t), makeUser(t)]);
    const created = (await api(owner, 'POST', '/api/apps', { name: 'Pizza shop', webhookUrl: shop.url })).json();
    secrets = [created.webhookSecret];
    assert.equal((await api(owner, 'PUT', `/api/apps/${created.id}/manifest`, pizzaManifest)).statusCode, 200);
    await api(owner, 'PATCH', `/api/apps/${created.id}`, { public: true });
    const room = await makeRoom(t, owner, { members: [member] });
    await api(owner, 'POST', `/api/rooms/${room.id}/apps/${created.id}`);
    for (const s of [owner, member]) await api(s, 'POST', `/api/apps/${created.id}/install`);
    const invoke = (s: typeof owner, body: object) => api(s, 'POST', `/api/apps/${created.id}/invocations`, { roomId: room.id, ...body });

    assert.equal((await api(owner, 'POST', `/api/apps/${created.id}/ping`)).json().outcome, 'OK', 'the SDK answers pings');
    const first = (await invoke(member, { command: 'order', step: 'size', values: { size: 'large' } })).json();
    assert.deepEqual([first.outcome, first.view.id, first.view.title], ['view', 'details', 'How many large pizzas?']);
    const second = (await invoke(member, { invocationId: first.invocationId, step: 'details', values: { count: 2, note: 'extra basil' } })).json();
    assert.deepEqual([second.outcome, second.visibility, second.card.blocks[0].text], ['card', 'room', 'Order: 2 × large']);

    // The owner taps Pay on the member's order: the payment is asked of the tapper.
    const wallet = await walletWith(t, owner, 'USDT', 50_000_000n);
    const sheet = (await invoke(owner, { action: { messageId: second.messageId, id: 'pay' } })).json();
    assert.deepEqual([sheet.outcome, sheet.payment.amount, sheet.payment.description], ['payment', '23', '2 × large pizza']);
    const paid = (await api(owner, 'POST', `/api/app-payments/${sheet.payment.id}/confirm`, { walletId: wallet })).json();
    assert.deepEqual([paid.payment.status, paid.reply.message], ['COMPLETED', 'Paid: your pizza is on its way']);
    assert.equal(shop.paid.get(sheet.payment.reference)?.payment.amount, '23');

    // The shop's server uses the SDK's clients: a partial refund (idempotent), and a card from its bot.
    const payments = new PaymentsClient(baseUrl, (await api(owner, 'POST', `/api/apps/${created.id}/payment-keys`)).json().token);
    const refund = await payments.refund(sheet.payment.id, { amount: '3', idempotencyKey: 'late-delivery-1' });
    assert.deepEqual([refund.status, (await payments.refund(sheet.payment.id, { amount: '3', idempotencyKey: 'late-delivery-1' })).id], ['DONE', 'late-delivery-1']);
    assert.equal((await payments.payment(sheet.payment.id)).refunded, '3');
    await assert.rejects(payments.refund(sheet.payment.id, { amount: '21', idempotencyKey: 'too-much-1' }), (error: unknown) => error instanceof ServiceApiError && error.code === 'REFUND_EXCEEDS_PAYMENT');
    const bot = new BotClient(baseUrl, (await api(owner, 'POST', `/api/apps/${created.id}/bot-tokens`, { roomId: room.id })).json().token);
    const posted = await bot.postCard(room.id, { blocks: [{ type: 'title', text: 'Your pizza left the oven' }] });
    const latest = (await api(member, 'GET', `/api/messages/${room.id}`)).json().items[0];
    assert.deepEqual([latest.id, latest.card.blocks[0].text], [posted.messageId, 'Your pizza left the oven']);

    // A session token for the app's own web page: checked with the service's JWKS by the SDK.
    const session = (await api(member, 'POST', `/api/apps/${created.id}/session-token`)).json();
    const jwks = (await (await fetch(`${baseUrl}/.well-known/jwks.json`)).json()) as Parameters<typeof verifySessionToken>[1];
    const memberId = (await api(member, 'GET', '/api/apps/installed')).json()[0].appUserId;
    assert.deepEqual(verifySessionToken(session.token, jwks, created.id)?.userId, memberId);
    assert.equal(verifySessionToken(session.token, jwks, 'another-app'), null);
    // A signature with one character changed (in its middle: the last character of base64url carries padding bits a decoder may ignore).
    const at = (session.token as string).lastIndexOf('.') + 10;
    const tampered = `${session.token.slice(0, at)}${session.token[at] === 'A' ? 'B' : 'A'}${session.token.slice(at + 1)}`;
    assert.equal(verifySessionToken(tampered, jwks, created.id), null);
    assert.equal(verifySessionToken(session.token, jwks, created.id, Math.floor(Date.now() / 1000) + 301), null, 'expired after 5 minutes');

    // A rotated secret: the shop keeps verifying with its old one for the overlap, then with the new one.
    const rotated = (await api(owner, 'POST', `/api/apps/${created.id}/webhook-secret/rotate`)).json().webhookSecret;
    assert.equal((await invoke(member, { command: 'menu' })).json().outcome, 'card');
    secrets = [rotated];
    assert.equal((await invoke(member, { command: 'menu' })).json().outcome, 'card');
    secrets = ['whsec_wrong'];
    assert.equal((await invoke(member, { command: 'menu' })).json().outcome, 'failed', 'the SDK refuses what it cannot verify (401, the app\'s error)');
  });

  it('verifyWebhook refuses a replayed delivery, a stale timestamp and a bad signature', async () => {
    const { createHmac } = await import('node:crypto');
    const secret = 'whsec_test-secret';
    const body = '{"type":"ping","ts":1}';
    const signed = (ts: number, delivery: string, signedBody = body) => ({ 'x-service-timestamp': String(ts), 'x-service-delivery': delivery, 'x-service-signature': `v1=${createHmac('sha256', secret).update(`${ts}.${signedBody}`).digest('hex')}` });
    const store = new MemoryReplayStore();
    const now = Math.floor(Date.now() / 1000);
    assert.deepEqual(await verifyWebhook({ secrets: secret, headers: signed(now, 'd1'), rawBody: body, replayStore: store }), { ok: true, deliveryId: 'd1', replayKey: replayKeyOf(body) });
    assert.deepEqual(await verifyWebhook({ secrets: secret, headers: signed(now, 'd1'), rawBody: body, replayStore: store }), { ok: false, reason: 'REPLAYED' });
    // The delivery header is not signed: a replay with a new one is the same call.
    assert.deepEqual(await verifyWebhook({ secrets: secret, headers: signed(now, 'd-new'), rawBody: body, replayStore: store }), { ok: false, reason: 'REPLAYED' });
    assert.deepEqual(await verifyWebhook({ secrets: secret, headers: signed(now - 301, 'd2'), rawBody: body, replayStore: store }), { ok: false, reason: 'STALE_TIMESTAMP' });
    assert.deepEqual(await verifyWebhook({ secrets: secret, headers: signed(now, 'd3'), rawBody: `${body} `, replayStore: store }), { ok: false, reason: 'BAD_SIGNATURE' });
    const another = '{"type":"ping","ts":2}';
    assert.deepEqual(await verifyWebhook({ secrets: ['whsec_new', secret], headers: signed(now, 'd4', another), rawBody: another, replayStore: store }), { ok: true, deliveryId: 'd4', replayKey: replayKeyOf(another) });
  });
});
