import assert from 'node:assert/strict';
import { generateKeyPairSync, sign } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { bearer, startTestApp, type Session, type TestApp } from '../helpers/app.js';
import { httpAs, makeUser } from '../helpers/factories.js';
import { walletWith as walletWithFunds } from '../helpers/wallets.js';
import type { Currency } from '../../src/wallets/money.js';
import { paySigned } from '../../src/wallets/payment-requests.service.js';

describe('payment requests', () => {
  let t: TestApp;
  const api = httpAs(() => t);
  before(async () => {
    t = await startTestApp({ PAYMENT_REQUEST_TTL: '60' });
  });
  after(() => t.close());

  const walletWith = (s: Session, currency: Currency, units: bigint) => walletWithFunds(t, s, currency, units);
  const available = async (s: Session, id: string) => (await api(s, 'GET', `/api/wallets/${id}`)).json().available as string;
  const create = (s: Session, body: object) => api(s, 'POST', '/api/payment-requests', body);

  it('asks several members, each pays their item once into the target wallet, then it is PAID', async () => {
    const [owner, bob, carol] = await Promise.all([makeUser(t), makeUser(t), makeUser(t)]);
    const target = await walletWith(owner, 'USDT', 0n);
    const [bobWallet, carolWallet] = [await walletWith(bob, 'USDT', 20_000_000n), await walletWith(carol, 'USDT', 20_000_000n)];
    const res = await create(owner, { walletId: target, items: [{ recipientId: bob.userId, amount: '5' }, { recipientId: carol.userId, amount: '7.5' }], note: 'dinner' });
    assert.equal(res.statusCode, 200, res.body);
    const request = res.json();
    assert.equal(request.status, 'OPEN');
    assert.equal(request.walletId, target);

    const incoming = (await api(bob, 'GET', '/api/payment-requests?role=incoming')).json();
    assert.equal(incoming.items[0].id, request.id);
    assert.equal(incoming.items[0].walletId, null, 'the target wallet is the owner\'s business');
    assert.equal((await api(owner, 'GET', '/api/payment-requests?role=outgoing')).json().items[0].id, request.id);

    const paid = await api(bob, 'POST', `/api/payment-requests/${request.id}/pay`, { walletId: bobWallet });
    assert.equal(paid.statusCode, 200, paid.body);
    assert.equal(paid.json().items.find((i: { recipientId: string }) => i.recipientId === bob.userId).status, 'PAID');
    assert.equal(paid.json().status, 'OPEN');
    const again = await api(bob, 'POST', `/api/payment-requests/${request.id}/pay`, { walletId: bobWallet });
    assert.equal(again.json().code, 'PAYMENT_ITEM_NOT_OPEN');
    assert.equal(await available(bob, bobWallet), '15');

    // Once an item is paid, it cannot be cancelled.
    const cancel = await api(owner, 'POST', `/api/payment-requests/${request.id}/cancel`);
    assert.equal(cancel.json().code, 'PAYMENT_REQUEST_HAS_PAYMENTS');

    const last = await api(carol, 'POST', `/api/payment-requests/${request.id}/pay`, { walletId: carolWallet });
    assert.equal(last.json().status, 'PAID');
    assert.equal(await available(owner, target), '12.5');
    assert.ok((await t.ctx.services.walletsReconciler.run()).ok);
  });

  it('refuses what it must, changing nothing', async () => {
    const [owner, bob, stranger] = await Promise.all([makeUser(t), makeUser(t), makeUser(t)]);
    const target = await walletWith(owner, 'ETH', 0n);
    const [bobEth, bobUsdt] = [await walletWith(bob, 'ETH', 10n ** 16n), await walletWith(bob, 'USDT', 10_000_000n)];
    for (const [items, code] of [
      [[{ recipientId: owner.userId, amount: '1' }], 'PAYMENT_RECIPIENT_INVALID'],
      [[{ recipientId: bob.userId, amount: '1' }, { recipientId: bob.userId, amount: '2' }], 'PAYMENT_RECIPIENT_INVALID'],
      [[{ recipientId: 'no-such-user', amount: '1' }], 'PAYMENT_RECIPIENT_INVALID'],
      [[{ recipientId: bob.userId, amount: '0' }], 'AMOUNT_INVALID'],
    ] as const) {
      const res = await create(owner, { walletId: target, items });
      assert.equal(res.json().code, code, JSON.stringify(items));
    }
    assert.equal((await create(stranger, { walletId: target, items: [{ recipientId: bob.userId, amount: '1' }] })).json().code, 'WALLET_NOT_FOUND');

    const request = (await create(owner, { walletId: target, items: [{ recipientId: bob.userId, amount: '0.02' }] })).json();
    assert.equal((await api(bob, 'POST', `/api/payment-requests/${request.id}/pay`, { walletId: bobUsdt })).json().code, 'CURRENCY_MISMATCH');
    assert.equal((await api(bob, 'POST', `/api/payment-requests/${request.id}/pay`, { walletId: bobEth })).json().code, 'INSUFFICIENT_FUNDS');
    assert.equal((await api(stranger, 'POST', `/api/payment-requests/${request.id}/pay`, { walletId: bobEth })).json().code, 'PAYMENT_REQUEST_NOT_FOUND');
    assert.equal((await api(bob, 'POST', `/api/payment-requests/${request.id}/cancel`)).json().code, 'PAYMENT_REQUEST_NOT_FOUND', 'only the owner cancels');
    assert.equal(await available(bob, bobEth), '0.01');

    const cancelled = await api(owner, 'POST', `/api/payment-requests/${request.id}/cancel`);
    assert.equal(cancelled.json().status, 'CANCELLED');
    assert.equal((await api(owner, 'POST', `/api/payment-requests/${request.id}/cancel`)).json().code, 'PAYMENT_REQUEST_CLOSED');
    const afterCancel = await api(bob, 'POST', `/api/payment-requests/${request.id}/pay`, { walletId: bobEth });
    assert.equal(afterCancel.json().code, 'PAYMENT_REQUEST_CLOSED');
  });

  it('expires, and then takes no payment', async () => {
    const [owner, bob] = await Promise.all([makeUser(t), makeUser(t)]);
    const target = await walletWith(owner, 'USDT', 0n);
    const bobWallet = await walletWith(bob, 'USDT', 10_000_000n);
    const request = (await create(owner, { walletId: target, items: [{ recipientId: bob.userId, amount: '1' }] })).json();
    t.clock.advance(61_000);
    assert.equal((await api(bob, 'POST', `/api/payment-requests/${request.id}/pay`, { walletId: bobWallet })).json().code, 'PAYMENT_REQUEST_CLOSED');
    assert.ok((await t.ctx.services.paymentRequests.sweep()).expired >= 1);
    assert.equal((await api(owner, 'GET', '/api/payment-requests?role=outgoing')).json().items[0].status, 'EXPIRED');
    assert.equal(await available(bob, bobWallet), '10');
  });

  it('needs the biometric confirmation of the request and wallet when the device has a key', async () => {
    const [owner, bob] = await Promise.all([makeUser(t), makeUser(t)]);
    const target = await walletWith(owner, 'USDT', 0n);
    const [w1, w2] = [await walletWith(bob, 'USDT', 10_000_000n), await walletWith(bob, 'USDT', 10_000_000n)];
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const signed = (message: string) => sign('sha256', Buffer.from(message), privateKey).toString('base64');
    const nonce = async () => (await t.app.inject({ method: 'POST', url: '/api/devices/biometric-key/nonce', headers: bearer(bob.accessToken) })).json().nonce as string;
    const n0 = await nonce();
    const enrolled = await api(bob, 'PUT', '/api/devices/biometric-key', { publicKey: publicKey.export({ format: 'der', type: 'spki' }).toString('base64'), algorithm: 'ECDSA_P256', nonce: n0, signature: signed(`BIOMETRIC_KEY_ENROLL_V1|${n0}`) });
    assert.equal(enrolled.statusCode, 204, enrolled.body);
    const request = (await create(owner, { walletId: target, items: [{ recipientId: bob.userId, amount: '1' }] })).json();
    const url = `/api/payment-requests/${request.id}/pay`;
    assert.equal((await api(bob, 'POST', url, { walletId: w1 })).json().code, 'BIOMETRIC_CONFIRMATION_REQUIRED');
    const n1 = await nonce();
    assert.equal((await api(bob, 'POST', url, { walletId: w1, biometric: { nonce: n1, signature: signed(paySigned(n1, request.id, w2)) } })).json().code, 'BIOMETRIC_CONFIRMATION_INVALID');
    const n2 = await nonce();
    const good = await api(bob, 'POST', url, { walletId: w1, biometric: { nonce: n2, signature: signed(paySigned(n2, request.id, w1)) } });
    assert.equal(good.json().status, 'PAID', good.body);
    assert.equal(await available(bob, w1), '9');
    assert.equal(await available(bob, w2), '10');
  });
});
