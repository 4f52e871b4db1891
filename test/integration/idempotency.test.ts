import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { httpAs, makeRoom, makeUser } from '../helpers/factories.js';
import { requestFingerprint } from '../../rest/idempotency.js';

describe('Idempotency-Key on mutating /api calls', () => {
  let t: TestApp;
  const api = httpAs(() => t);
  before(async () => {
    t = await startTestApp({ WEBHOOK_ALLOW_PRIVATE: 'true' });
  });
  after(() => t.close());

  it('never keeps an answer that shows a secret: nothing secret in Redis, a repeat is refused 409 (issue 24, item 3)', async () => {
    const s = await makeUser(t);
    const redis = t.ctx.platform.redis;
    /** Every string value under this deployment's prefix (keys the idempotency layer writes are plain strings). */
    const stored = async () => {
      const keys = await redis.keys(`${t.ctx.platform.keys.prefix}*`);
      const values = await Promise.all(keys.map(async (key) => ((await redis.type(key)) === 'string' ? ((await redis.get(key)) ?? '') : '')));
      return values.join('\n');
    };
    const secrets: string[] = [];
    const once = async (url: string, body: object | undefined, reveal: (answer: Record<string, string>) => string) => {
      const key = `secret-${url}`;
      const first = await api(s, 'POST', url, body, { 'idempotency-key': key });
      assert.ok(first.statusCode < 300, `${url}: ${first.body}`);
      secrets.push(reveal(first.json()));
      const again = await api(s, 'POST', url, body, { 'idempotency-key': key });
      assert.deepEqual([again.statusCode, again.json().code], [409, 'IDEMPOTENCY_ANSWER_NOT_KEPT'], url);
      return first.json();
    };
    const app = await once('/api/apps', { name: 'Keeper', webhookUrl: 'http://127.0.0.1:9/hook' }, (a) => a.webhookSecret!);
    await once(`/api/apps/${app.id}/webhook-secret/rotate`, undefined, (a) => a.webhookSecret!);
    await once(`/api/apps/${app.id}/payment-keys`, undefined, (a) => a.token!);
    const room = await makeRoom(t, s);
    assert.equal((await api(s, 'POST', `/api/rooms/${room.id}/apps/${app.id}`)).statusCode, 204);
    await once(`/api/apps/${app.id}/bot-tokens`, { roomId: room.id }, (a) => a.token!);
    await once('/api/users/2fa/setup', undefined, (a) => a.secret!);
    assert.deepEqual(secrets.map((secret) => secret.slice(0, 4)).slice(0, 4), ['whse', 'whse', 'bpk_', 'bbt_']);
    const inRedis = await stored();
    for (const secret of secrets) assert.ok(secret.length >= 16 && !inRedis.includes(secret), `a secret is stored in Redis: ${secret.slice(0, 8)}…`);
    assert.ok(!/whsec_|bbt_[A-Za-z0-9]|bpk_[A-Za-z0-9]/.test(inRedis), 'no credential in Redis');
  });

  it('a repeat with the same key and request gets the first answer, nothing is done twice', async () => {
    const s = await makeUser(t);
    const create = (key: string, body: object = { currency: 'USDT', name: 'Savings' }) => api(s, 'POST', '/api/wallets', body, { 'idempotency-key': key });
    const first = await create('create-savings-1');
    assert.equal(first.statusCode, 200, first.body);
    const again = await create('create-savings-1');
    assert.deepEqual([again.statusCode, again.json(), again.headers['idempotent-replayed']], [200, first.json(), 'true']);
    assert.equal(first.headers['idempotent-replayed'], undefined);
    assert.equal((await api(s, 'GET', '/api/wallets')).json().length, 1, 'one wallet');

    // The same key with another request; a quoted key is the same key.
    const other = await create('create-savings-1', { currency: 'ETH' });
    assert.deepEqual([other.statusCode, other.json().code], [400, 'IDEMPOTENCY_KEY_REUSED']);
    assert.deepEqual((await create('"create-savings-1"')).json(), first.json());
    // Refusals are answers too: kept and given again.
    const refused = await create('bad-name-1', { currency: 'USDT', name: '   ' });
    assert.equal(refused.statusCode, 400);
    assert.deepEqual((await create('bad-name-1', { currency: 'USDT', name: '   ' })).json(), refused.json());
    // Keys are the caller's own: another member's same key is another request.
    const stranger = await makeUser(t);
    assert.equal((await api(stranger, 'POST', '/api/wallets', { currency: 'USDT', name: 'Savings' }, { 'idempotency-key': 'create-savings-1' })).headers['idempotent-replayed'], undefined);
    assert.equal((await api(stranger, 'GET', '/api/wallets')).json().length, 1);
    // Without the header nothing changes.
    await api(s, 'POST', '/api/wallets', { currency: 'USDT', name: 'Savings' });
    assert.equal((await api(s, 'GET', '/api/wallets')).json().length, 2);
  });

  it('409 while the first request runs; 400 for a key that is not one', async () => {
    const s = await makeUser(t);
    const request = { method: 'POST', url: '/api/wallets', body: { currency: 'USDT', name: 'Running' }, headers: { 'content-type': 'application/json' } };
    // The first request is under way (its claim, as the service makes it).
    const claimed = await t.ctx.services.idempotency.claim(s.userId, 'slow-request-1', requestFingerprint(request));
    assert.equal(claimed, null);
    const meanwhile = await api(s, 'POST', '/api/wallets', request.body, { 'idempotency-key': 'slow-request-1' });
    assert.deepEqual([meanwhile.statusCode, meanwhile.json().code, meanwhile.headers['retry-after']], [409, 'IDEMPOTENCY_KEY_IN_USE', '1']);
    for (const key of ['x'.repeat(256), 'with space', '']) {
      const res = await api(s, 'POST', '/api/wallets', request.body, { 'idempotency-key': key });
      assert.deepEqual([res.statusCode, res.json().code], [400, 'IDEMPOTENCY_KEY_INVALID'], JSON.stringify(key));
    }
    assert.equal((await api(s, 'POST', '/api/wallets', request.body, { 'idempotency-key': 'x'.repeat(255) })).statusCode, 200, '255 characters pass');
  });

  it('the document offers the header on mutating operations, with its codes', async () => {
    const doc = (await t.app.inject({ url: '/v3/api-docs/api-traffic' })).json() as { paths: Record<string, Record<string, { parameters?: { name: string; in: string }[]; responses: Record<string, { description: string }> }>> };
    const post = doc.paths['/api/wallets']!.post!;
    assert.ok(post.parameters?.some((p) => p.in === 'header' && p.name === 'Idempotency-Key'));
    assert.match(post.responses['409']!.description, /IDEMPOTENCY_KEY_IN_USE/);
    assert.ok(!doc.paths['/api/wallets']!.get!.parameters?.some((p) => p.name === 'Idempotency-Key'), 'not on reads');
  });
});
