import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { bearer, signIn, startTestApp, testConfig, type Session, type TestApp } from '../helpers/app.js';

const ALLOWED = 'https://web.example.com';

describe('CORS for web clients on other origins (CORS_ORIGINS)', () => {
  let plain: TestApp;
  let cors: TestApp;
  let session: Session;

  before(async () => {
    [plain, cors] = await Promise.all([startTestApp(), startTestApp({ CORS_ORIGINS: `${ALLOWED}, http://localhost:5173` })]);
    session = await signIn(cors);
  });
  after(async () => {
    await Promise.all([plain.close(), cors.close()]);
  });

  const preflight = (t: TestApp, origin: string, url = '/api/messages') =>
    t.app.inject({ method: 'OPTIONS', url, headers: { origin, 'access-control-request-method': 'PUT', 'access-control-request-headers': 'authorization, content-type, idempotency-key' } });

  it('off by default: no origin is allowed, a preflight gets no CORS headers', async () => {
    const answer = await preflight(plain, ALLOWED);
    assert.equal(answer.headers['access-control-allow-origin'], undefined);
    assert.notEqual(answer.statusCode, 204);
  });

  it('an allowed origin: its preflight is answered 204 with the methods and headers, its requests carry Access-Control-Allow-Origin', async () => {
    const answer = await preflight(cors, ALLOWED);
    assert.equal(answer.statusCode, 204);
    assert.equal(answer.headers['access-control-allow-origin'], ALLOWED);
    assert.match(String(answer.headers['access-control-allow-methods']), /PUT/);
    for (const header of ['authorization', 'content-type', 'idempotency-key']) assert.match(String(answer.headers['access-control-allow-headers']), new RegExp(header));
    const me = await cors.app.inject({ method: 'GET', url: '/api/users/me', headers: { ...bearer(session.accessToken), origin: 'http://localhost:5173' } });
    assert.equal(me.statusCode, 200);
    assert.equal(me.headers['access-control-allow-origin'], 'http://localhost:5173');
    assert.match(String(me.headers['access-control-expose-headers']), /retry-after/);
    assert.match(String(me.headers.vary), /Origin/);
    assert.equal(me.headers['access-control-allow-credentials'], undefined, 'bearer tokens only, never cookies');
  });

  it('any other origin, and the console, get no CORS headers', async () => {
    for (const origin of ['https://evil.example.com', 'https://web.example.com.evil.com', 'null']) {
      const answer = await preflight(cors, origin);
      assert.equal(answer.headers['access-control-allow-origin'], undefined, origin);
      const me = await cors.app.inject({ method: 'GET', url: '/api/users/me', headers: { ...bearer(session.accessToken), origin } });
      assert.equal(me.headers['access-control-allow-origin'], undefined, origin);
    }
    assert.equal((await preflight(cors, ALLOWED, '/console/apps')).headers['access-control-allow-origin'], undefined);
  });

  it('an origin with a path is a configuration error', async () => {
    await assert.rejects(testConfig({ CORS_ORIGINS: 'https://web.example.com/app' }), /CORS_ORIGINS/);
  });
});
