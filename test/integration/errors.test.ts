import http from 'node:http';
import type { AddressInfo } from 'node:net';
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { bearer, signIn, startTestApp, type Session, type TestApp } from '../helpers/app.js';

function assertErrorBody(body: Record<string, unknown>, status: number, code: string, path: string) {
  assert.equal(body.status, status);
  assert.equal(body.code, code);
  assert.equal(typeof body.message, 'string');
  assert.equal(body.path, path);
  assert.ok(!Number.isNaN(Date.parse(String(body.timestamp))));
}

describe('error model', () => {
  let t: TestApp;
  let session: Session;
  before(async () => {
    t = await startTestApp({ BODY_LIMIT: '2048' });
    session = await signIn(t);
  });
  after(() => t.close());

  it('unknown routes: 404 ErrorResponse', async () => {
    const res = await t.app.inject({ url: '/api/nothing/here?x=1' });
    assert.equal(res.statusCode, 404);
    assert.match(String(res.headers['content-type']), /application\/json/);
    assertErrorBody(res.json(), 404, 'NOT_FOUND', '/api/nothing/here');
  });

  it('a method a path does not take: 405 naming the methods it has', async () => {
    const trace = await t.app.inject({ method: 'TRACE', url: '/api/users/me', headers: bearer(session.accessToken) });
    assert.equal(trace.statusCode, 405);
    assert.equal(trace.headers.allow, 'GET, HEAD, PATCH, DELETE');
    assertErrorBody(trace.json(), 405, 'METHOD_NOT_ALLOWED', '/api/users/me');
    const withId = await t.app.inject({ method: 'PUT', url: `/api/rooms/${'a'.repeat(24)}/leave`, headers: bearer(session.accessToken) });
    assert.equal(withId.statusCode, 405);
    assert.equal(withId.headers.allow, 'POST');
    assert.equal((await t.app.inject({ method: 'TRACE', url: '/api/users/me/nothing' })).statusCode, 404);
    // Routes of one shape with differently named parameters answer together (a message id and a room id).
    const sameShape = await t.app.inject({ method: 'OPTIONS', url: `/api/messages/${'b'.repeat(24)}`, headers: bearer(session.accessToken) });
    assert.equal(sameShape.headers.allow, 'GET, HEAD, PUT, PATCH, DELETE');
    // A method that carries a body is refused before its body is looked at.
    const query = await t.app.inject({ method: 'QUERY' as 'GET', url: '/api/rooms', headers: bearer(session.accessToken) });
    assert.equal(query.statusCode, 405);
    assert.equal(query.headers.allow, 'GET, HEAD, POST');
    // The methods of the route the router picks: a fixed word wins over a parameter.
    const search = await t.app.inject({ method: 'OPTIONS', url: '/api/rooms/search' });
    assert.equal(search.headers.allow, 'POST');
    const pushToken = await t.app.inject({ method: 'OPTIONS', url: '/api/devices/push-token' });
    assert.equal(pushToken.headers.allow, 'PUT');
  });

  it('malformed JSON: 400 MALFORMED_JSON, nothing changes', async () => {
    const res = await t.app.inject({
      method: 'PATCH',
      url: '/api/users/me',
      headers: { ...bearer(session.accessToken), 'content-type': 'application/json' },
      payload: '{"displayName": "Eve"',
    });
    assertErrorBody(res.json(), 400, 'MALFORMED_JSON', '/api/users/me');
    const me = await t.app.inject({ url: '/api/users/me', headers: bearer(session.accessToken) });
    assert.equal(me.json().displayName, null);
  });

  it('a wrong content type: 415', async () => {
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/xml']) {
      const res = await t.app.inject({ method: 'POST', url: '/api/auth/code', headers: { 'content-type': type }, payload: 'phone=+14155550123' });
      assert.equal(res.statusCode, 415, type);
      assertErrorBody(res.json(), 415, 'UNSUPPORTED_MEDIA_TYPE', '/api/auth/code');
    }
  });

  it('an oversized body: 413', async () => {
    const res = await t.app.inject({
      method: 'PATCH',
      url: '/api/users/me',
      headers: { ...bearer(session.accessToken), 'content-type': 'application/json' },
      payload: JSON.stringify({ displayName: 'x'.repeat(3000) }),
    });
    assertErrorBody(res.json(), 413, 'PAYLOAD_TOO_LARGE', '/api/users/me');
    assert.match(res.json().message, /larger than the limit of \d+ bytes/);
  });

  it('an oversized body over real HTTP: the same 413 with or without Expect: 100-continue (as curl sends it)', async () => {
    await t.app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = t.app.server.address() as AddressInfo;
    const body = Buffer.from(JSON.stringify({ phone: '+4915112345678', pad: 'x'.repeat(t.config.BODY_LIMIT + 10) }));
    const send = (expect: boolean) =>
      new Promise<{ status: number; json: { code: string; message: string } }>((resolve, reject) => {
        const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: '/api/auth/code', headers: { 'content-type': 'application/json', 'content-length': body.length, ...(expect ? { expect: '100-continue' } : {}) } }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, json: JSON.parse(Buffer.concat(chunks).toString('utf8')) as { code: string; message: string } }));
        });
        req.on('error', reject);
        if (expect) req.on('continue', () => req.end(body));
        else req.end(body);
      });
    for (const expect of [true, false]) {
      const res = await send(expect);
      assert.equal(res.status, 413, `expect ${expect}`);
      assert.equal(res.json.code, 'PAYLOAD_TOO_LARGE');
    }
  });

  it('validation failures: 400 VALIDATION_FAILED naming the field', async () => {
    const res = await t.app.inject({
      method: 'PATCH',
      url: '/api/users/me',
      headers: bearer(session.accessToken),
      payload: { displayName: '', language: 'not a language' },
    });
    const body = res.json();
    assertErrorBody(body, 400, 'VALIDATION_FAILED', '/api/users/me');
    const fields = (body.details as { field: string }[]).map((d) => d.field).sort();
    assert.deepEqual(fields, ['displayName', 'language']);
  });

  it('unknown body fields are refused rather than ignored', async () => {
    const res = await t.app.inject({ method: 'PATCH', url: '/api/users/me', headers: bearer(session.accessToken), payload: { phone: '+14155550123' } });
    assert.equal(res.statusCode, 400);
    assert.equal(res.json().code, 'VALIDATION_FAILED');
  });

  it('missing, non-JSON and array bodies are coded 400s, never 500s', async () => {
    for (const payload of [undefined, '[]', '"text"', '42', 'null', '{"phone": null}', '{"phone": {"$gt": ""}}']) {
      const res = await t.app.inject({ method: 'POST', url: '/api/auth/code', headers: { 'content-type': 'application/json' }, payload });
      assert.equal(res.statusCode, 400, String(payload));
      assert.match(res.json().code, /^(VALIDATION_FAILED|MALFORMED_JSON|PHONE_INVALID)$/);
    }
  });

  it('a bad path id is a 400, not a 404 or 500', async () => {
    const res = await t.app.inject({ url: `/api/users/${'x'.repeat(100)}`, headers: bearer(session.accessToken) });
    assert.equal(res.statusCode, 400);
    assert.equal(res.json().code, 'VALIDATION_FAILED');
    const missing = await t.app.inject({ url: '/api/users/no-such-user', headers: bearer(session.accessToken) });
    assert.equal(missing.statusCode, 400);
    assert.equal(missing.json().code, 'USER_NOT_FOUND');
  });

  it('echoes a request id, or makes one', async () => {
    const given = await t.app.inject({ url: '/healthz', headers: { 'x-request-id': 'abc-123' } });
    assert.equal(given.headers['x-request-id'], 'abc-123');
    const made = await t.app.inject({ url: '/healthz', headers: { 'x-request-id': 'bad id with spaces' } });
    assert.match(String(made.headers['x-request-id']), /^[0-9a-f-]{36}$/);
  });
});

describe('router-level errors', () => {
  it('an over-long path parameter is a coded error, not a bare framework answer', async () => {
    const t = await startTestApp();
    try {
      const res = await t.app.inject({ url: `/media/${'x'.repeat(3000)}` });
      assert.equal(res.statusCode, 414);
      assert.equal(res.json().code, 'BAD_URL');
      assert.equal(res.json().status, 414);
    } finally {
      await t.close();
    }
  });
});
