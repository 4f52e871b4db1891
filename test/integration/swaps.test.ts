import assert from 'node:assert/strict';
import { generateKeyPairSync, sign } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { bearer, startTestApp, type Session, type TestApp } from '../helpers/app.js';
import { httpAs, makeUser } from '../helpers/factories.js';
import { fund, walletWith as walletWithFunds } from '../helpers/wallets.js';
import type { Currency } from '../../src/wallets/money.js';
import { convert, swapSigned } from '../../src/wallets/swaps.service.js';

describe('swaps', () => {
  let t: TestApp;
  const api = httpAs(() => t);
  before(async () => {
    // A house with 1 ETH and 3,000 USDT of liquidity, a 0.5 % fee, quotes valid 30 s, ETH at 3,000 USDT.
    t = await startTestApp({ HOUSE_LIQUIDITY_ETH: '1', HOUSE_LIQUIDITY_USDT: '3000', SWAP_FEE_BPS: '50', SWAP_QUOTE_TTL: '30' });
  });
  after(() => t.close());

  const walletWith = (s: Session, currency: Currency, units: bigint) => walletWithFunds(t, s, currency, units);
  const available = async (s: Session, id: string) => (await api(s, 'GET', `/api/wallets/${id}`)).json().available as string;
  const quote = (s: Session, body: object) => api(s, 'POST', '/api/wallet-swaps/quote', body);
  const execute = (s: Session, body: object) => api(s, 'POST', '/api/wallet-swaps', body);

  it('quotes without debiting, then trades at the quoted price, once', async () => {
    const s = await makeUser(t);
    const [eth, usdt] = [await walletWith(s, 'ETH', 10n ** 18n), await walletWith(s, 'USDT', 0n)];
    const first = await quote(s, { fromWalletId: eth, toWalletId: usdt, amount: '0.1' });
    assert.equal(first.statusCode, 200, first.body);
    const q = first.json();
    assert.deepEqual([q.fromCurrency, q.toCurrency, q.amount, q.price, q.fee, q.receiveAmount], ['ETH', 'USDT', '0.1', '3000', '0.0005', '298.5']);
    assert.ok(Date.parse(q.expiresAt) > Date.now());
    // Asking again on every amount change debits nothing.
    for (const amount of ['0.2', '0.3', '0.05']) assert.equal((await quote(s, { fromWalletId: eth, toWalletId: usdt, amount })).statusCode, 200);
    assert.equal(await available(s, eth), '1');

    const done = await execute(s, { quoteId: q.id });
    assert.equal(done.statusCode, 200, done.body);
    assert.equal(done.json().status, 'COMPLETED');
    assert.equal(await available(s, eth), '0.9');
    assert.equal(await available(s, usdt), '298.5');
    const twice = await execute(s, { quoteId: q.id });
    assert.equal(twice.json().code, 'QUOTE_ALREADY_USED');
    assert.equal(await available(s, eth), '0.9');

    const list = (await api(s, 'GET', `/api/wallet-swaps?walletId=${eth}`)).json();
    assert.equal(list.items.length, 1);
    assert.equal(list.pageSize, 20);
    assert.equal((await api(s, 'GET', `/api/wallet-swaps?walletId=${eth}&pageSize=101`)).statusCode, 400);
    assert.ok((await t.ctx.services.walletsReconciler.run()).ok);
  });

  it('refuses an expired quote, a stranger\'s quote, a short balance and same-currency swaps; neither wallet changes', async () => {
    const [s, stranger] = await Promise.all([makeUser(t), makeUser(t)]);
    const [eth, usdt] = [await walletWith(s, 'ETH', 10n ** 17n), await walletWith(s, 'USDT', 5_000_000n)];
    const q = (await quote(s, { fromWalletId: eth, toWalletId: usdt, amount: '0.05' })).json();
    t.clock.advance(31_000);
    const late = await execute(s, { quoteId: q.id });
    assert.equal(late.json().code, 'QUOTE_EXPIRED');
    assert.equal((await execute(stranger, { quoteId: (await quote(s, { fromWalletId: eth, toWalletId: usdt, amount: '0.01' })).json().id })).json().code, 'QUOTE_NOT_FOUND');
    const tooMuch = (await quote(s, { fromWalletId: eth, toWalletId: usdt, amount: '0.2' })).json();
    const short = await execute(s, { quoteId: tooMuch.id });
    assert.equal(short.json().code, 'INSUFFICIENT_FUNDS');
    assert.equal((await quote(s, { fromWalletId: eth, toWalletId: eth, amount: '0.01' })).json().code, 'SWAP_SAME_CURRENCY');
    assert.equal((await quote(s, { fromWalletId: usdt, toWalletId: eth, amount: '0.000001' })).json().code, 'SWAP_TOO_SMALL');
    assert.equal((await quote(stranger, { fromWalletId: eth, toWalletId: usdt, amount: '0.01' })).json().code, 'WALLET_NOT_FOUND');
    assert.equal(await available(s, eth), '0.1');
    assert.equal(await available(s, usdt), '5');
    // The refused quote was not used up: with the money there, it goes through.
    await fund(t, eth, 'ETH', 2n * 10n ** 17n);
    assert.equal((await execute(s, { quoteId: tooMuch.id })).json().status, 'COMPLETED');
  });

  it('is PENDING while the house is short of the target currency, and credited when it can', async () => {
    const [big, seller] = await Promise.all([makeUser(t), makeUser(t)]);
    const [usdt, eth] = [await walletWith(big, 'USDT', 6_000_000_000n), await walletWith(big, 'ETH', 0n)];
    // 6,000 USDT buys about 2 ETH; the house has 1 ETH.
    const q = (await quote(big, { fromWalletId: usdt, toWalletId: eth, amount: '6000' })).json();
    const pending = (await execute(big, { quoteId: q.id })).json();
    assert.equal(pending.status, 'PENDING');
    assert.equal(await available(big, usdt), '0', 'paid');
    assert.equal(await available(big, eth), '0', 'not credited yet');
    assert.equal(await t.ctx.services.swaps.fillPending(), 0);
    // Someone sells ETH to the house: it can fill now.
    const [sellerEth, sellerUsdt] = [await walletWith(seller, 'ETH', 2n * 10n ** 18n), await walletWith(seller, 'USDT', 0n)];
    const sale = (await quote(seller, { fromWalletId: sellerEth, toWalletId: sellerUsdt, amount: '2' })).json();
    assert.equal((await execute(seller, { quoteId: sale.id })).json().status, 'COMPLETED');
    t.clock.advance(3_000);
    assert.equal(await t.ctx.services.swaps.fillPending(), 1);
    assert.equal(await available(big, eth), q.receiveAmount);
    assert.ok((await t.ctx.services.walletsReconciler.run()).ok);
  });

  it('needs the biometric confirmation of the quote when the device has a key', async () => {
    const s = await makeUser(t);
    const [eth, usdt] = [await walletWith(s, 'ETH', 10n ** 17n), await walletWith(s, 'USDT', 0n)];
    const { privateKey, publicKey } = generateKeyPairSync('ed25519');
    const signed = (message: string) => sign(null, Buffer.from(message), privateKey).toString('base64');
    const nonce = async () => (await t.app.inject({ method: 'POST', url: '/api/devices/biometric-key/nonce', headers: bearer(s.accessToken) })).json().nonce as string;
    const n0 = await nonce();
    const enrolled = await api(s, 'PUT', '/api/devices/biometric-key', { publicKey: publicKey.export({ format: 'der', type: 'spki' }).toString('base64'), algorithm: 'ED25519', nonce: n0, signature: signed(`BIOMETRIC_KEY_ENROLL_V1|${n0}`) });
    assert.equal(enrolled.statusCode, 204, enrolled.body);
    const [a, b] = [(await quote(s, { fromWalletId: eth, toWalletId: usdt, amount: '0.01' })).json(), (await quote(s, { fromWalletId: eth, toWalletId: usdt, amount: '0.02' })).json()];
    assert.equal((await execute(s, { quoteId: a.id })).json().code, 'BIOMETRIC_CONFIRMATION_REQUIRED');
    const n1 = await nonce();
    const other = await execute(s, { quoteId: a.id, biometric: { nonce: n1, signature: signed(swapSigned(n1, b.id)) } });
    assert.equal(other.json().code, 'BIOMETRIC_CONFIRMATION_INVALID', 'a signature over another quote');
    assert.equal(await available(s, eth), '0.1');
    const n2 = await nonce();
    const good = await execute(s, { quoteId: a.id, biometric: { nonce: n2, signature: signed(swapSigned(n2, a.id)) } });
    assert.equal(good.json().status, 'COMPLETED', good.body);
  });

  it('converts in integer arithmetic, rounding down', () => {
    assert.equal(convert(10n ** 18n, 'ETH', 'USDT', '3000'), 3_000_000_000n);
    assert.equal(convert(1n, 'USDT', 'ETH', '0.000333333333333333'), 333_333_333n);
    assert.equal(convert(1n, 'ETH', 'USDT', '3000'), 0n);
  });
});
