import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { createContext } from '../../src/composition.js';
import { createLogger } from '../../src/platform/logger.js';
import { bearer, freshPhone, lastCode, startTestApp, testConfig, type TestApp, apiOf } from '../helpers/app.js';

describe('operations', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp();
  });
  after(() => t.close());

  it('healthz, readyz and metrics answer', async () => {
    assert.deepEqual((await t.app.inject({ url: '/healthz' })).json(), { status: 'ok' });
    const ready = await t.app.inject({ url: '/readyz' });
    assert.equal(ready.statusCode, 200);
    assert.deepEqual(ready.json().checks, { mongodb: 'ok', redis: 'ok' });
    const metrics = await t.app.inject({ url: '/metrics' });
    assert.equal(metrics.statusCode, 200);
    assert.match(metrics.body, /http_request_duration_seconds_count\{method="GET",route="\/readyz",status="200"\} 1/);
    assert.match(metrics.body, /process_resident_memory_bytes/);
  });

  it('readyz says 503 when a dependency is gone', async () => {
    const config = await testConfig();
    const ctx = await createContext(config, createLogger(config, 'test'));
    const app = await apiOf(ctx);
    try {
      await ctx.platform.redis.quit();
      const res = await app.inject({ url: '/readyz' });
      assert.equal(res.statusCode, 503);
      assert.equal(res.json().code, 'NOT_READY');
      assert.deepEqual(res.json().details, [{ mongodb: 'ok', redis: 'down' }]);
    } finally {
      await app.close();
      await ctx.platform.db.dropDatabase();
      await ctx.close();
    }
  });

  it('logs requests as JSON with a request id and no secrets', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _encoding, done) {
        lines.push(...chunk.toString().trim().split('\n'));
        done();
      },
    });
    const config = await testConfig({ LOG_LEVEL: 'info' });
    const ctx = await createContext(config, createLogger(config, 'test', sink));
    const app = await apiOf(ctx);
    try {
      const phone = freshPhone();
      await app.inject({ method: 'POST', url: '/api/auth/code', payload: { phone } });
      const code = await lastCode(config.SMS_OUTBOX_FILE, phone);
      const login = await app.inject({ method: 'POST', url: '/api/auth/login', payload: { phone, code, device: { name: 'x', platform: 'WEB' } } });
      const { accessToken, refreshToken } = login.json();
      await app.inject({ method: 'POST', url: '/api/users/2fa/enable?code=123456', headers: { ...bearer(accessToken), 'x-request-id': 'trace-me' } });
      ctx.platform.logger.info({ user: { token: accessToken, code: '654321' } }, 'nested secrets');

      const text = lines.join('\n');
      const parsed = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
      const enable = parsed.find((entry) => entry.reqId === 'trace-me');
      assert.ok(enable, 'request line with its request id');
      assert.equal(enable.url, '/api/users/2fa/enable?code=[REDACTED]');
      for (const secret of [code, accessToken, refreshToken, '123456', '654321']) assert.ok(!text.includes(secret), 'a secret reached the log');
    } finally {
      await app.close();
      await ctx.platform.db.dropDatabase();
      await ctx.close();
    }
  });

  it('the clean-up removes expired login codes and keeps live ones', async () => {
    const phone = freshPhone();
    const codes = t.db.collection('login_codes');
    const now = new Date();
    await codes.insertMany([
      { _id: `old-${phone}` as never, phone, codeHash: 'x', attempts: 0, createdAt: now, expiresAt: new Date(now.getTime() - 1000), consumedAt: null },
      { _id: `live-${phone}` as never, phone, codeHash: 'x', attempts: 0, createdAt: now, expiresAt: new Date(now.getTime() + 60_000), consumedAt: null },
    ]);
    const removed = await t.ctx.services.maintenance.cleanupExpired(now);
    assert.ok(removed.loginCodes >= 1);
    assert.deepEqual((await codes.find({ phone }).toArray()).map((row) => row._id), [`live-${phone}`]);
  });
});
