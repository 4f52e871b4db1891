import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { CodeHasher } from '../../src/platform/code-hash.js';
import { AppError } from '../../src/platform/errors.js';
import { readOutbox, startTestApp, type TestApp } from '../helpers/app.js';

/** The numbers texted so far, read from the SMS outbox as a phone would. */
async function texted(t: TestApp): Promise<string[]> {
  return (await readOutbox<{ to: string }>(t.outbox)).map((sms) => sms.to);
}
const requestCode = (t: TestApp, phone: string, from: { remoteAddress?: string; forwardedFor?: string } = {}) =>
  t.app.inject({ method: 'POST', url: '/api/auth/code', payload: { phone }, ...(from.remoteAddress ? { remoteAddress: from.remoteAddress } : {}), ...(from.forwardedFor ? { headers: { 'x-forwarded-for': from.forwardedFor } } : {}) });
const german = (n: number) => `+4915112${String(n).padStart(6, '0')}`;

describe('sign-in abuse: where texts may go and how many', () => {
  const apps: TestApp[] = [];
  const app = async (overrides: Record<string, string>) => {
    const t = await startTestApp(overrides);
    apps.push(t);
    return t;
  };
  after(() => Promise.all(apps.map((t) => t.close())));

  it('a number of a country outside SMS_ALLOWED_COUNTRIES, or of a refused type, gets 400 and no text', async () => {
    const t = await app({ SMS_ALLOWED_COUNTRIES: 'DE,AT' });
    for (const [phone, reason] of [
      ['+14155550123', 'this country'],
      ['+448712345678', 'this country'],
      // Germany's shared-cost and fixed-line numbers are refused by type.
      ['+4918012345678', 'this kind'],
      ['+4932212345678', 'this kind'],
    ] as const) {
      const res = await requestCode(t, phone);
      assert.equal(res.statusCode, 400, phone);
      assert.equal(res.json().code, 'PHONE_COUNTRY_NOT_ALLOWED');
      assert.match(res.json().message, new RegExp(reason));
    }
    assert.equal((await requestCode(t, german(1))).statusCode, 204);
    assert.deepEqual(await texted(t), [german(1)]);
    // Premium rate is refused by type where the country is allowed.
    const everywhere = await app({});
    assert.match((await requestCode(everywhere, '+448712345678')).json().message, /this kind/);
    assert.deepEqual(await texted(everywhere), []);
  });

  it('the global hourly budget: 503 SMS_UNAVAILABLE with Retry-After past it, nothing sent, and texts again in the next hour', async () => {
    const t = await app({ SMS_BUDGET_GLOBAL_HOUR: '3' });
    const hourStart = Math.floor(Date.now() / 3_600_000 + 1) * 3_600_000;
    t.clock.advance(hourStart - Date.now() + 60_000);
    for (let i = 0; i < 3; i++) assert.equal((await requestCode(t, german(100 + i))).statusCode, 204);
    const refused = await requestCode(t, german(200));
    assert.equal(refused.statusCode, 503);
    assert.equal(refused.json().code, 'SMS_UNAVAILABLE');
    const retryAfter = Number(refused.headers['retry-after']);
    assert.ok(retryAfter > 3000 && retryAfter <= 3540, `Retry-After ${retryAfter}: until the next hour`);
    assert.equal((await texted(t)).length, 3, 'no text past the budget');
    const metrics = (await t.app.inject({ url: '/metrics' })).body;
    assert.match(metrics, /sms_budget_refusals\{scope="global"\} 1/);
    t.clock.advance(3_600_000);
    assert.equal((await requestCode(t, german(201))).statusCode, 204, 'the next hour has a new budget');
    assert.equal((await texted(t)).length, 4);
  });

  it('the budgets per destination country and per number prefix', async () => {
    const t = await app({ SMS_BUDGET_COUNTRY_HOUR: '2', SMS_BUDGET_PREFIX_HOUR: '100' });
    assert.equal((await requestCode(t, german(300))).statusCode, 204);
    assert.equal((await requestCode(t, '+4915799912345')).statusCode, 204);
    assert.equal((await requestCode(t, '+4917612345678')).statusCode, 503, 'a third text to Germany this hour');
    assert.equal((await requestCode(t, '+4369912345678')).statusCode, 204, 'Austria has its own budget');

    const p = await app({ SMS_BUDGET_PREFIX_HOUR: '2' });
    assert.equal((await requestCode(p, german(400))).statusCode, 204);
    assert.equal((await requestCode(p, german(401))).statusCode, 204);
    assert.equal((await requestCode(p, german(402))).statusCode, 503, 'a third text to +491511 this hour');
    assert.equal((await requestCode(p, '+4917612345678')).statusCode, 204, 'another prefix');
  });

  it('argon2 hashes are bounded per process: past the concurrency and the wait, 503 BUSY with Retry-After', async () => {
    const hasher = new CodeHasher({ memoryKiB: 65_536, passes: 3 }, { concurrency: 1, waitMs: 0 });
    const results = await Promise.allSettled([hasher.hash('123456'), hasher.hash('234567'), hasher.hash('345678')]);
    assert.equal(results.filter((r) => r.status === 'fulfilled').length, 1);
    for (const r of results.filter((r): r is PromiseRejectedResult => r.status === 'rejected')) {
      assert.ok(r.reason instanceof AppError && r.reason.code === 'BUSY' && r.reason.status === 503, String(r.reason));
    }
    // With a wait long enough, every hash runs, one at a time.
    const patient = new CodeHasher({ memoryKiB: 8_192, passes: 2 }, { concurrency: 1, waitMs: 10_000 });
    const hashes = await Promise.all(['1', '2', '3', '4'].map((code) => patient.hash(code)));
    assert.equal(hashes.length, 4);
    assert.ok(await patient.verify(hashes[2]!, '3'));

    // Through the route: many code requests at once on one process with room for one hash and no wait.
    const t = await app({ CODE_HASH_CONCURRENCY: '1', CODE_HASH_WAIT_MS: '0', CODE_HASH_MEMORY_KIB: '65536', CODE_HASH_PASSES: '3' });
    const answers = await Promise.all(Array.from({ length: 12 }, (_, i) => requestCode(t, german(500 + i), { remoteAddress: `198.18.${i}.1` })));
    const statuses = answers.map((res) => res.statusCode);
    assert.ok(statuses.every((status) => status === 204 || status === 503), statuses.join(','));
    const busy = answers.filter((res) => res.statusCode === 503);
    assert.ok(busy.length > 0, 'some requests found every hash slot taken');
    for (const res of busy) {
      assert.equal(res.json().code, 'BUSY');
      assert.equal(res.headers['retry-after'], '1');
    }
    assert.equal((await texted(t)).length, statuses.filter((status) => status === 204).length, 'a refused request sends nothing');
  });

  it('30 numbers from one address: 429 past the per-address count, with Retry-After, and no text past it', async () => {
    const t = await app({});
    const statuses: number[] = [];
    for (let i = 0; i < 30; i++) statuses.push((await requestCode(t, german(600 + i), { remoteAddress: '198.51.100.7' })).statusCode);
    assert.deepEqual(statuses, [...Array(10).fill(204), ...Array(20).fill(429)]);
    const refused = await requestCode(t, german(700), { remoteAddress: '198.51.100.7' });
    assert.equal(refused.json().code, 'TOO_MANY_FROM_ADDRESS');
    assert.ok(Number(refused.headers['retry-after']) > 3000);
    assert.equal((await texted(t)).length, 10);
    // Another address is counted apart.
    assert.equal((await requestCode(t, german(701), { remoteAddress: '198.51.101.7' })).statusCode, 204);
  });

  it('per network: /24 for IPv4 and /56 for IPv6', async () => {
    const t = await app({ SIGNIN_CODES_PER_NETWORK: '3', SIGNIN_CODES_PER_ADDRESS: '100' });
    for (let i = 1; i <= 3; i++) assert.equal((await requestCode(t, german(800 + i), { remoteAddress: `192.0.2.${i}` })).statusCode, 204);
    assert.equal((await requestCode(t, german(810), { remoteAddress: '192.0.2.200' })).statusCode, 429, 'a fourth address of the same /24');
    assert.equal((await requestCode(t, german(811), { remoteAddress: '192.0.3.1' })).statusCode, 204, 'another /24');
    for (let i = 1; i <= 3; i++) assert.equal((await requestCode(t, german(820 + i), { remoteAddress: `2001:db8:1:a${i}::${i}` })).statusCode, 204);
    assert.equal((await requestCode(t, german(830), { remoteAddress: '2001:db8:1:ff::9' })).statusCode, 429, 'a fourth address of the same /56');
    assert.equal((await requestCode(t, german(831), { remoteAddress: '2001:db8:1:100::1' })).statusCode, 204, 'another /56');
  });

  it('behind a trusted proxy each forwarded address counts apart; from an untrusted peer the header is ignored', async () => {
    const proxied = await app({ TRUST_PROXY_HOPS: '1' });
    for (let i = 0; i < 12; i++) assert.equal((await requestCode(proxied, german(900 + i), { remoteAddress: '127.0.0.1', forwardedFor: `203.0.${i}.9` })).statusCode, 204);
    const direct = await app({});
    const statuses: number[] = [];
    for (let i = 0; i < 12; i++) statuses.push((await requestCode(direct, german(950 + i), { remoteAddress: '198.51.100.9', forwardedFor: `203.0.${i}.9` })).statusCode);
    assert.deepEqual(statuses, [...Array(10).fill(204), 429, 429], 'a claimed X-Forwarded-For does not escape the limit');
  });

  it('sign-in attempts per address: 429 past the count, before any code is checked', async () => {
    const t = await app({ SIGNIN_ATTEMPTS_PER_ADDRESS: '3' });
    const phone = german(990);
    assert.equal((await requestCode(t, phone, { remoteAddress: '198.51.100.50' })).statusCode, 204);
    const attempt = () => t.app.inject({ method: 'POST', url: '/api/auth/login', payload: { phone, code: '000000', device: { name: 'P', platform: 'IOS' } }, remoteAddress: '198.51.100.60' });
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await attempt()).statusCode);
    assert.deepEqual(statuses, [400, 400, 400, 429]);
  });

  it('answers do not tell whether a number has an account', async () => {
    const t = await app({});
    const known = german(1000);
    const { signIn } = await import('../helpers/app.js');
    await signIn(t, known);
    const unknown = german(1001);
    const [a, b] = [await requestCode(t, known, { remoteAddress: '198.51.100.71' }), await requestCode(t, unknown, { remoteAddress: '198.51.100.72' })];
    assert.deepEqual([a.statusCode, a.body], [b.statusCode, b.body]);
    const wrong = (phone: string, remoteAddress: string) => t.app.inject({ method: 'POST', url: '/api/auth/login', payload: { phone, code: '000000', device: { name: 'P', platform: 'IOS' } }, remoteAddress });
    const [c, d] = [await wrong(known, '198.51.100.73'), await wrong(unknown, '198.51.100.74')];
    assert.equal(c.statusCode, d.statusCode);
    const body = (res: typeof c) => ({ ...(res.json() as Record<string, unknown>), requestId: null, timestamp: null });
    assert.deepEqual(body(c), body(d));
  });
});
