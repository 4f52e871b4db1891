import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { bearer, signIn, startTestApp, type Session, type TestApp } from '../helpers/app.js';
import { httpAs, makeUser } from '../helpers/factories.js';
import { fund, withBiometricKey } from '../helpers/wallets.js';
import { limitSigned } from '../../src/wallets/limits.service.js';

const ADMIN_PHONE = '+4915100000042';

describe('sending limits', () => {
  let t: TestApp;
  let admin: Session;
  const api = httpAs(() => t);
  before(async () => {
    t = await startTestApp({ ADMIN_PHONES: ADMIN_PHONE, LIMIT_REQUEST_DEVICE_WAIT: '60', WALLET_DAILY_LIMIT_USDT: '100' });
    admin = await signIn(t, ADMIN_PHONE);
  });
  after(() => t.close());

  /** A member whose device has a biometric key; `signWith` signs with it. */
  async function memberWithKey() {
    const s = await makeUser(t);
    return { s, ...(await withBiometricKey(t, s)) };
  }
  const nonce = async (s: Session) => (await t.app.inject({ method: 'POST', url: '/api/devices/biometric-key/nonce', headers: bearer(s.accessToken) })).json().nonce as string;
  const ask = async (m: { s: Session; signWith: (message: string) => string }, body: { tier?: string; noLimit?: true; duration: string }, signedAs = body) => {
    const n = await nonce(m.s);
    return api(m.s, 'POST', '/api/wallet-limits/requests', { ...body, biometric: { nonce: n, signature: m.signWith(limitSigned(n, signedAs.noLimit ? 'NONE' : signedAs.tier!, signedAs.duration as 'DAYS_7')) } });
  };

  it('asks only from a device past its wait, with a signed request, one at a time; the decision is told and applies', async () => {
    const m = await memberWithKey();
    const tooNew = await ask(m, { tier: 'TIER_2', duration: 'DAYS_7' });
    assert.equal(tooNew.json().code, 'LIMIT_DEVICE_TOO_NEW');
    t.clock.advance(61_000);
    const otherFields = await ask(m, { tier: 'TIER_2', duration: 'DAYS_7' }, { tier: 'TIER_3', duration: 'DAYS_7' });
    assert.equal(otherFields.json().code, 'BIOMETRIC_CONFIRMATION_INVALID');
    const both = await api(m.s, 'POST', '/api/wallet-limits/requests', { tier: 'TIER_2', noLimit: true, duration: 'DAYS_7', biometric: { nonce: 'x', signature: 'eA==' } });
    assert.equal(both.statusCode, 400);

    const asked = await ask(m, { tier: 'TIER_2', duration: 'DAYS_7' });
    assert.equal(asked.statusCode, 200, asked.body);
    assert.equal(asked.json().status, 'OPEN');
    assert.equal((await ask(m, { noLimit: true, duration: 'UNTIL_CHANGED' })).json().code, 'LIMIT_REQUEST_OPEN');

    // Members cannot decide; administrators list and approve.
    assert.equal((await api(m.s, 'POST', `/api/admin/wallet-limit-requests/${asked.json().id}/approve`)).statusCode, 401);
    const open = (await api(admin, 'GET', '/api/admin/wallet-limit-requests')).json();
    assert.ok(open.items.some((r: { id: string }) => r.id === asked.json().id));
    const approved = await api(admin, 'POST', `/api/admin/wallet-limit-requests/${asked.json().id}/approve`);
    assert.equal(approved.json().status, 'APPROVED');
    assert.ok(approved.json().effectiveUntil);
    assert.equal((await api(admin, 'POST', `/api/admin/wallet-limit-requests/${asked.json().id}/refuse`)).json().code, 'LIMIT_REQUEST_DECIDED');
    const inbox = await t.ctx.platform.redis.zrange(t.ctx.platform.keys.inboxEvents(m.s.deviceId), '0', '-1');
    assert.ok(inbox.some((entry) => entry.includes('wallet.limit-request-decided') && entry.includes('APPROVED')), 'the devices are told');

    // TIER_2: ten times the 100 USDT of TIER_1 a day.
    assert.equal(await t.ctx.services.walletLimits.limitOf(m.s.userId, 'USDT'), 1_000_000_000n);
    const wallet = (await api(m.s, 'POST', '/api/wallets', { currency: 'USDT' })).json().id;
    await fund(t, wallet, 'USDT', 2_000_000_000n);
    // The limit applies to withdrawals: 500 passes the check at TIER_2 (it would not at TIER_1).
    const n = await nonce(m.s);
    const body = { requestId: `limits-${Date.now()}`, walletId: wallet, toAddress: '0x1111111111111111111111111111111111111111', amount: '500' };
    const { withdrawSigned } = await import('../../src/wallets/withdrawals.service.js');
    const withdrawal = await api(m.s, 'POST', '/api/wallet-withdrawals', { ...body, biometric: { nonce: n, signature: m.signWith(withdrawSigned(n, body)) } });
    assert.equal(withdrawal.statusCode, 200, withdrawal.body);

    // It ends after its 7 days: back to TIER_1.
    t.clock.advance(7 * 86_400_000 + 1_000);
    assert.equal(await t.ctx.services.walletLimits.limitOf(m.s.userId, 'USDT'), 100_000_000n);
  });

  it('needs a biometric key, and waits 7 days after a refusal', async () => {
    // The clock moved past the administrator's access token in the test before.
    admin = await refresh(admin);
    const plain = await makeUser(t);
    t.clock.advance(61_000);
    const noKey = await api(plain, 'POST', '/api/wallet-limits/requests', { noLimit: true, duration: 'DAYS_30', biometric: { nonce: 'x', signature: 'eA==' } });
    assert.equal(noKey.json().code, 'LIMIT_NEEDS_BIOMETRIC_KEY');

    const m = await memberWithKey();
    t.clock.advance(61_000);
    const first = (await ask(m, { noLimit: true, duration: 'UNTIL_CHANGED' })).json();
    const refused = await api(admin, 'POST', `/api/admin/wallet-limit-requests/${first.id}/refuse`);
    assert.equal(refused.json().status, 'REFUSED');
    assert.equal(await t.ctx.services.walletLimits.limitOf(m.s.userId, 'USDT'), 100_000_000n);
    assert.equal((await ask(m, { tier: 'TIER_2', duration: 'DAYS_7' })).json().code, 'LIMIT_REFUSED_RECENTLY');
    t.clock.advance(7 * 86_400_000 + 1_000);
    // Past the week (and past the access token's life: sign in again on the same device's number).
    const again = await ask({ ...m, s: await refresh(m.s) }, { noLimit: true, duration: 'UNTIL_CHANGED' });
    assert.equal(again.statusCode, 200, again.body);
  });

  it('lasts what was asked: 30 days, or until another is approved; no other duration is taken', async () => {
    admin = await signIn(t, ADMIN_PHONE);
    const [m, lasting] = [await memberWithKey(), await memberWithKey()];
    t.clock.advance(61_000);
    for (const duration of ['DAYS_14', 'FOREVER', '']) assert.equal((await ask(m, { tier: 'TIER_2', duration })).statusCode, 400, duration);
    const month = (await ask(m, { tier: 'TIER_3', duration: 'DAYS_30' })).json();
    assert.ok((await api(admin, 'POST', `/api/admin/wallet-limit-requests/${month.id}/approve`)).json().effectiveUntil);
    const untilChanged = (await ask(lasting, { tier: 'TIER_2', duration: 'UNTIL_CHANGED' })).json();
    assert.equal((await api(admin, 'POST', `/api/admin/wallet-limit-requests/${untilChanged.id}/approve`)).json().effectiveUntil, null);
    const tier3 = await t.ctx.services.walletLimits.limitOf(m.s.userId, 'USDT');
    assert.ok(tier3 !== null && tier3 > 1_000_000_000n, 'TIER_3 allows more than TIER_2');

    t.clock.advance(29 * 86_400_000);
    assert.equal(await t.ctx.services.walletLimits.limitOf(m.s.userId, 'USDT'), tier3, 'still on day 29');
    t.clock.advance(86_400_000 + 1_000);
    assert.equal(await t.ctx.services.walletLimits.limitOf(m.s.userId, 'USDT'), 100_000_000n, 'back to TIER_1 after 30 days');
    t.clock.advance(400 * 86_400_000);
    assert.equal(await t.ctx.services.walletLimits.limitOf(lasting.s.userId, 'USDT'), 1_000_000_000n, 'until changed: more than a year on, still TIER_2');
  });

  /** A fresh access token for the same device, through the refresh endpoint. */
  async function refresh(s: Session): Promise<Session> {
    const res = await t.app.inject({ method: 'POST', url: '/api/auth/refresh', payload: { refreshToken: s.refreshToken } });
    assert.equal(res.statusCode, 200, res.body);
    return { ...s, ...res.json() };
  }
});
