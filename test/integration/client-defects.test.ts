import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { bearer, freshPhone, signIn, startTestApp, type Session, type TestApp, twilioAt } from '../helpers/app.js';
import { httpAs, makeRoom, makeUser, postMessage } from '../helpers/factories.js';
import { totp } from '../helpers/totp.js';

// Defects a client coding against the document met (issue 11, part 2): each failed before its fix.
describe('what a client coding against the spec meets', () => {
  let t: TestApp;
  const api = httpAs(() => t);
  before(async () => {
    t = await startTestApp();
  });
  after(() => t.close());

  it('takes the Bearer scheme in any case (RFC 9110)', async () => {
    const s = await makeUser(t);
    for (const scheme of ['bearer', 'BEARER', 'Bearer']) {
      const res = await t.app.inject({ url: '/api/users/me', headers: { authorization: `${scheme} ${s.accessToken}` } });
      assert.equal(res.statusCode, 200, scheme);
    }
    assert.equal((await t.app.inject({ url: '/api/users/me', headers: { authorization: `Basic ${s.accessToken}` } })).statusCode, 401);
  });

  it('ignores userId and takes null attachmentIds when posting', async () => {
    const s = await makeUser(t);
    const room = await makeRoom(t, s);
    const res = await api(s, 'PUT', `/api/messages/${room.id}`, { roomId: room.id, message: 'hello', userId: null, attachmentIds: null });
    assert.equal(res.statusCode, 200, res.body);
    const other = await api(s, 'PUT', `/api/messages/${room.id}`, { roomId: room.id, message: 'again', userId: 'someone-else' });
    assert.equal(other.statusCode, 200, other.body);
    const [latest] = (await api(s, 'GET', `/api/messages/${room.id}?limit=1`)).json().items;
    assert.equal(latest.userId, s.userId, 'the caller is the author');
  });

  it('answers a coded 400, not a 500, to multipart without a boundary', async () => {
    const s = await makeUser(t);
    const room = await makeRoom(t, s);
    for (const url of ['/api/speech-to-text', `/api/messages/${room.id}/attachments`]) {
      const res = await t.app.inject({ method: 'POST', url, headers: { ...bearer(s.accessToken), 'content-type': 'multipart/form-data' }, payload: 'not really multipart' });
      assert.equal(res.statusCode, 400, `${url}: ${res.body}`);
      assert.equal(typeof res.json().code, 'string');
      assert.equal(res.json().status, 400);
    }
  });

  it('answers a coded 400, not a 500, to a multipart part without headers (found by the fuzzer)', async () => {
    const s = await makeUser(t);
    const room = await makeRoom(t, s);
    const boundary = '804bd5c9f867a231c5e582766347871e';
    const payload = `--${boundary}\r\n2.220446049250313e-16--${boundary}--\r\n`;
    for (const roomId of [room.id, '35d2aeea-fea1-4a98-8d45-867d2f76240d']) {
      for (const url of ['/api/speech-to-text', `/api/messages/${roomId}/attachments`]) {
        const res = await t.app.inject({ method: 'POST', url, headers: { ...bearer(s.accessToken), 'content-type': `multipart/form-data; boundary=${boundary}` }, payload });
        assert.ok(res.statusCode >= 400 && res.statusCode < 500, `${url}: ${res.statusCode} ${res.body}`);
      }
    }
  });

  it('takes an e-mail address only within RFC 5321\'s lengths (found by the fuzzer)', async () => {
    const s = await makeUser(t);
    const tooLong = await api(s, 'PATCH', '/api/users/me', { email: `${'a'.repeat(65)}@example.com` });
    assert.equal(tooLong.statusCode, 400, tooLong.body);
    assert.equal(tooLong.json().code, 'VALIDATION_FAILED');
    const longest = await api(s, 'PATCH', '/api/users/me', { email: `${'a'.repeat(64)}@example.com` });
    assert.equal(longest.statusCode, 200, longest.body);
  });

  it('refuses an empty number in a query instead of reading it as 0, and documents it as an int32 (found by the fuzzer)', async () => {
    const s = await makeUser(t);
    for (const url of ['/api/users/connections?currentPage=&pageSize=1', '/api/users/connections?pageSize=', '/api/rooms?currentPage=']) {
      const res = await api(s, 'GET', url);
      assert.equal(res.statusCode, 400, url);
      assert.equal(res.json().code, 'VALIDATION_FAILED');
    }
    assert.equal((await api(s, 'GET', '/api/users/connections?pageSize=1')).statusCode, 200);
    const document = (await t.app.inject({ url: '/v3/api-docs/api-traffic' })).json();
    const parameter = document.paths['/api/users/connections'].get.parameters.find((p: { name: string }) => p.name === 'currentPage');
    assert.deepEqual([parameter.schema.type, parameter.schema.format, parameter.schema.minimum], ['integer', 'int32', 0]);
  });

  describe('a member\'s enabled and muted state belong to the membership', () => {
    let owner: Session;
    let member: Session;
    before(async () => {
      [owner, member] = await Promise.all([makeUser(t), makeUser(t)]);
    });

    it('a member an admin disabled stays disabled after leaving and joining again', async () => {
      const group = await makeRoom(t, owner, { type: 'PUBLIC_GROUP' });
      assert.equal((await api(member, 'POST', `/api/rooms/${group.id}/join`)).statusCode, 200);
      await postMessage(t, member, group.id, 'before');
      assert.equal((await api(owner, 'POST', `/api/rooms/${group.id}/members/${member.userId}/enabled?enabled=false`)).statusCode, 204);
      assert.equal((await api(member, 'PUT', `/api/messages/${group.id}`, { roomId: group.id, message: 'muted?' })).json().code, 'NOT_A_MEMBER');
      assert.equal((await api(member, 'POST', `/api/rooms/${group.id}/leave`)).statusCode, 204);
      assert.equal((await api(member, 'POST', `/api/rooms/${group.id}/join`)).statusCode, 200);
      const again = await api(member, 'PUT', `/api/messages/${group.id}`, { roomId: group.id, message: 'back again' });
      assert.equal(again.statusCode, 400, 'still disabled');
      assert.equal(again.json().code, 'NOT_A_MEMBER');
    });

    it('adding an existing member changes neither enabled nor muted', async () => {
      const room = await makeRoom(t, owner, { members: [member] });
      assert.equal((await api(member, 'POST', `/api/rooms/${room.id}/muted?muted=true`)).json().muted, true);
      assert.equal((await api(owner, 'POST', `/api/rooms/${room.id}/members/${member.userId}/enabled?enabled=false`)).statusCode, 204);
      assert.equal((await api(owner, 'POST', `/api/rooms/${room.id}/members/${member.userId}`)).statusCode, 204);
      assert.equal((await api(member, 'PUT', `/api/messages/${room.id}`, { roomId: room.id, message: 'x' })).json().code, 'NOT_A_MEMBER', 'still disabled');
      assert.equal((await api(owner, 'POST', `/api/rooms/${room.id}/members/${member.userId}/enabled?enabled=true`)).statusCode, 204);
      assert.equal((await api(member, 'GET', `/api/rooms/${room.id}/muted`)).json().muted, true, 'still muted');
    });

    it('asking for an existing direct chat again does not unmute it', async () => {
      const direct = await makeRoom(t, owner, { type: 'DIRECT', members: [member] });
      assert.equal((await api(owner, 'POST', `/api/rooms/${direct.id}/muted?muted=true`)).json().muted, true);
      const again = await makeRoom(t, owner, { type: 'DIRECT', members: [member] });
      assert.equal(again.id, direct.id);
      assert.equal((await api(owner, 'GET', `/api/rooms/${direct.id}/muted`)).json().muted, true);
    });
  });

  it('documents the body of DELETE /api/devices/biometric-key as optional', async () => {
    const doc = (await t.app.inject({ url: '/v3/api-docs/api-traffic' })).json();
    const body = doc.paths['/api/devices/biometric-key'].delete.requestBody;
    assert.ok(body, 'the body is documented');
    assert.notEqual(body.required, true);
  });

  it('rate-limits wrong codes on two-factor enable and disable: 429 with Retry-After after 5', async () => {
    const s = await makeUser(t);
    assert.equal((await api(s, 'POST', '/api/users/2fa/setup')).statusCode, 200);
    for (let i = 0; i < 5; i++) assert.equal((await api(s, 'POST', '/api/users/2fa/enable?code=000000')).statusCode, 400, `try ${i + 1}`);
    const blocked = await api(s, 'POST', '/api/users/2fa/enable?code=000000');
    assert.equal(blocked.statusCode, 429);
    assert.equal(blocked.json().code, 'TOO_MANY_ATTEMPTS');
    assert.ok(Number(blocked.headers['retry-after']) > 0);

    // With two-factor on, wrong codes on disable are bounded the same way.
    const on = await makeUser(t);
    const { secret } = (await api(on, 'POST', '/api/users/2fa/setup')).json();
    assert.equal((await api(on, 'POST', `/api/users/2fa/enable?code=${totp(secret, t.clock().getTime())}`)).statusCode, 200);
    const wrong = totp(secret, t.clock().getTime() + 10 * 60_000);
    for (let i = 0; i < 5; i++) assert.equal((await api(on, 'POST', `/api/users/2fa/disable?code=${wrong}`)).statusCode, 400, `try ${i + 1}`);
    const refused = await api(on, 'POST', `/api/users/2fa/disable?code=${wrong}`);
    assert.equal(refused.statusCode, 429);
    assert.equal(refused.json().code, 'TOO_MANY_ATTEMPTS');
  });
});

describe('the biometric code when the SMS provider is down', () => {
  it('answers 503 SMS_UNAVAILABLE, as documented', async () => {
    const t = await startTestApp();
    const down = await startTestApp({
      MONGODB_DB: t.config.MONGODB_DB,
      REDIS_PREFIX: t.config.REDIS_PREFIX,
      JWT_SECRET: t.config.JWT_SECRET,
      ...twilioAt(),
    });
    try {
      const s = await signIn(t);
      const res = await down.app.inject({ method: 'POST', url: '/api/devices/biometric-key/code', headers: bearer(s.accessToken) });
      assert.equal(res.statusCode, 503, res.body);
      assert.equal(res.json().code, 'SMS_UNAVAILABLE');
    } finally {
      await down.app.close();
      await down.ctx.close();
      await t.close();
    }
  });
});

describe('an invitation while the SMS provider is down', () => {
  // A local server answering like Twilio's Messages API: down (503) until told otherwise.
  let server: http.Server;
  let up = false;
  const delivered: string[] = [];
  let t: TestApp;
  before(async () => {
    server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (chunk) => (body += chunk));
      req.on('end', () => {
        res.setHeader('content-type', 'application/json');
        if (!up) {
          res.statusCode = 503;
          res.end(JSON.stringify({ code: 20503, message: 'Service unavailable', status: 503 }));
          return;
        }
        delivered.push(new URLSearchParams(body).get('To') ?? '');
        res.statusCode = 201;
        res.end(JSON.stringify({ sid: 'SM0123456789abcdef0123456789abcdef', status: 'queued' }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    t = await startTestApp({
      ...twilioAt(`http://127.0.0.1:${(server.address() as AddressInfo).port}`),
    });
  });
  after(async () => {
    await t.close();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('is accepted (204), kept with a queued retry, accepted again on a retry, and sent once when the provider is back', async () => {
    // The inviter signs in through another app on the same database (this one's SMS is down).
    const signer = await startTestApp({ MONGODB_DB: t.config.MONGODB_DB, REDIS_PREFIX: t.config.REDIS_PREFIX, JWT_SECRET: t.config.JWT_SECRET });
    const inviter = await signIn(signer);
    await signer.app.close();
    await signer.ctx.close();

    const phone = freshPhone();
    const invite = () => t.app.inject({ method: 'POST', url: `/api/users/connection-requests?phone=${encodeURIComponent(phone)}`, headers: bearer(inviter.accessToken) });
    const first = await invite();
    assert.equal(first.statusCode, 204, first.body);
    const stored = await t.db.collection('connection_requests').findOne({ senderId: inviter.userId, recipientPhone: phone });
    assert.ok(stored, 'the invitation is stored');
    assert.equal(stored.invitation.state, 'QUEUED', 'not sent, waiting for its retry');
    const jobs = await t.ctx.platform.redis.keys(`${t.ctx.platform.queues.prefixOf('invitations')}:invitations:invite-${stored._id}-*`);
    assert.ok(jobs.length > 0, 'a retry job is queued');

    const again = await invite();
    assert.equal(again.statusCode, 204, `a retry of the same invitation is not refused: ${again.body}`);
    assert.equal(await t.db.collection('connection_requests').countDocuments({ senderId: inviter.userId, recipientPhone: phone }), 1);

    // The provider comes back; the retry job's run (here called directly) sends it, once.
    up = true;
    assert.equal(await t.ctx.services.contacts.deliverInvitation(String(stored._id)), 'SENT');
    assert.equal(await t.ctx.services.contacts.deliverInvitation(String(stored._id)), 'NOT_NEEDED');
    assert.deepEqual(delivered, [phone]);
    assert.equal((await t.db.collection('connection_requests').findOne({ _id: stored._id }))?.invitation.state, 'SENT');
    // Once sent, asking again sends nothing more.
    assert.equal((await invite()).statusCode, 204);
    assert.deepEqual(delivered, [phone]);
  });
});
