import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { addressOf, bearer, freshPhone, lastCode, signIn, startTestApp, type Session, type TestApp } from '../helpers/app.js';

describe('sign-in', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({ LOGIN_CODE_MAX_PER_WINDOW: '3', LOGIN_CODE_WINDOW: '600' });
  });
  after(() => t.close());

  const requestCode = (phone: string) => t.app.inject({ method: 'POST', url: '/api/auth/code', payload: { phone }, remoteAddress: addressOf(phone) });
  const login = (phone: string, code: string) =>
    t.app.inject({ method: 'POST', url: '/api/auth/login', payload: { phone, code, device: { name: 'Pixel', platform: 'ANDROID' } }, remoteAddress: addressOf(phone) });

  it('signs a new number in with the texted code and creates the user', async () => {
    const phone = freshPhone();
    assert.equal((await requestCode(phone)).statusCode, 204);
    const code = await lastCode(t.outbox, phone);
    assert.match(code, /^\d{6}$/);
    const res = await login(phone, code);
    assert.equal(res.statusCode, 200);
    const body = res.json();
    assert.equal(body.expiresIn, 900);
    assert.ok(body.accessToken && body.refreshToken && body.deviceId && body.userId);

    const me = await t.app.inject({ url: '/api/users/me', headers: bearer(body.accessToken) });
    assert.equal(me.statusCode, 200);
    assert.equal(me.json().phone, phone);
    assert.equal(me.json().id, body.userId);
    assert.equal(me.json().twoFactorEnabled, false);
  });

  it('accepts a national-format-free number with spaces and stores it in E.164', async () => {
    const phone = freshPhone();
    const spaced = `${phone.slice(0, 3)} ${phone.slice(3, 6)} ${phone.slice(6)}`;
    assert.equal((await requestCode(spaced)).statusCode, 204);
    const res = await login(spaced, await lastCode(t.outbox, phone));
    assert.equal(res.statusCode, 200);
  });

  it('stores codes only as argon2 hashes', async () => {
    const phone = freshPhone();
    await requestCode(phone);
    const code = await lastCode(t.outbox, phone);
    const rows = await t.db.collection('login_codes').find({ phone }).toArray();
    assert.equal(rows.length, 1);
    assert.match(String(rows[0]!.codeHash), /^\$argon2id\$/);
    assert.ok(!JSON.stringify(rows).includes(code));
  });

  it('rejects an invalid phone number with a coded 400', async () => {
    const res = await requestCode('+1 000');
    assert.equal(res.statusCode, 400);
    assert.equal(res.json().code, 'PHONE_INVALID');
  });

  it('gives 429 with Retry-After once too many codes were requested for one number', async () => {
    const phone = freshPhone();
    for (let i = 0; i < 3; i++) assert.equal((await requestCode(phone)).statusCode, 204);
    const res = await requestCode(phone);
    assert.equal(res.statusCode, 429);
    assert.equal(res.json().code, 'TOO_MANY_CODES');
    const retryAfter = Number(res.headers['retry-after']);
    assert.ok(retryAfter > 0 && retryAfter <= 600, `Retry-After ${retryAfter}`);
    // Another number is unaffected.
    assert.equal((await requestCode(freshPhone())).statusCode, 204);
  });

  it('kills a code after five wrong tries, even for the right code after that', async () => {
    const phone = freshPhone();
    await requestCode(phone);
    const code = await lastCode(t.outbox, phone);
    const wrong = code === '000000' ? '111111' : '000000';
    for (let i = 0; i < 5; i++) {
      const res = await login(phone, wrong);
      assert.equal(res.statusCode, 400);
      assert.equal(res.json().code, 'CODE_INVALID');
    }
    const res = await login(phone, code);
    assert.equal(res.statusCode, 400);
    assert.equal(res.json().code, 'CODE_INVALID');
  });

  it('accepts the right code after fewer than five wrong tries, and only once', async () => {
    const phone = freshPhone();
    await requestCode(phone);
    const code = await lastCode(t.outbox, phone);
    const wrong = code === '000000' ? '111111' : '000000';
    for (let i = 0; i < 4; i++) assert.equal((await login(phone, wrong)).statusCode, 400);
    assert.equal((await login(phone, code)).statusCode, 200);
    assert.equal((await login(phone, code)).statusCode, 400);
  });

  it('only the newest code works', async () => {
    const phone = freshPhone();
    await requestCode(phone);
    const first = await lastCode(t.outbox, phone);
    await requestCode(phone);
    const second = await lastCode(t.outbox, phone);
    if (first !== second) assert.equal((await login(phone, first)).statusCode, 400);
    assert.equal((await login(phone, second)).statusCode, 200);
  });

  it('rejects malformed codes as validation failures', async () => {
    for (const code of ['12345', '1234567', 'abcdef', '']) {
      const res = await login(freshPhone(), code);
      assert.equal(res.statusCode, 400);
      assert.equal(res.json().code, 'VALIDATION_FAILED');
    }
  });

  describe('sessions', () => {
    let session: Session;
    before(async () => {
      session = await signIn(t);
    });

    const refresh = (refreshToken: string) => t.app.inject({ method: 'POST', url: '/api/auth/refresh', payload: { refreshToken } });

    it('rotates the refresh token on every use, and a spent one revokes the device', async () => {
      const first = await refresh(session.refreshToken);
      assert.equal(first.statusCode, 200);
      const rotated = first.json();
      assert.notEqual(rotated.refreshToken, session.refreshToken);
      assert.equal(rotated.deviceId, session.deviceId);
      const second = await refresh(rotated.refreshToken);
      assert.equal(second.statusCode, 200);
      const latest = second.json();
      assert.equal((await t.app.inject({ url: '/api/users/me', headers: bearer(latest.accessToken) })).statusCode, 200);

      // Replaying the spent first token: a thief or a bug; the device's session ends.
      const replay = await refresh(session.refreshToken);
      assert.equal(replay.statusCode, 401);
      assert.equal(replay.json().code, 'REFRESH_TOKEN_REUSED');
      const after = await t.app.inject({ url: '/api/users/me', headers: bearer(latest.accessToken) });
      assert.equal(after.statusCode, 401);
      assert.equal(after.json().code, 'DEVICE_REVOKED');
      assert.equal((await refresh(latest.refreshToken)).statusCode, 401);
    });

    it('rejects garbage refresh tokens with 401', async () => {
      for (const token of ['nope', `${session.deviceId}.forged`, 'x.y']) {
        const res = await refresh(token);
        assert.equal(res.statusCode, 401);
        assert.equal(res.json().code, 'REFRESH_TOKEN_INVALID');
      }
    });

    it('revoking a device stops its access token at once, not at expiry', async () => {
      const phone = freshPhone();
      const phoneA = await signIn(t, phone, { name: 'A', platform: 'IOS' });
      const phoneB = await signIn(t, phone, { name: 'B', platform: 'ANDROID' });
      assert.equal(phoneA.userId, phoneB.userId);
      const list = await t.app.inject({ url: '/api/devices', headers: bearer(phoneA.accessToken) });
      assert.deepEqual(
        list.json().map((d: { name: string; current: boolean }) => [d.name, d.current]).sort(),
        [['A', true], ['B', false]],
      );
      const revoke = await t.app.inject({ method: 'DELETE', url: `/api/devices/${phoneB.deviceId}`, headers: bearer(phoneA.accessToken) });
      assert.equal(revoke.statusCode, 204);
      const res = await t.app.inject({ url: '/api/users/me', headers: bearer(phoneB.accessToken) });
      assert.equal(res.statusCode, 401);
      assert.equal(res.json().code, 'DEVICE_REVOKED');
      assert.equal((await refresh(phoneB.refreshToken)).statusCode, 401);
      // A revoked device is gone from the list, and revoking it again is a 400.
      assert.equal((await t.app.inject({ url: '/api/devices', headers: bearer(phoneA.accessToken) })).json().length, 1);
      const again = await t.app.inject({ method: 'DELETE', url: `/api/devices/${phoneB.deviceId}`, headers: bearer(phoneA.accessToken) });
      assert.equal(again.statusCode, 400);
      assert.equal(again.json().code, 'DEVICE_NOT_FOUND');
    });

    it('cannot revoke another user\'s device', async () => {
      const mine = await signIn(t);
      const theirs = await signIn(t);
      const res = await t.app.inject({ method: 'DELETE', url: `/api/devices/${theirs.deviceId}`, headers: bearer(mine.accessToken) });
      assert.equal(res.statusCode, 400);
      assert.equal((await t.app.inject({ url: '/api/users/me', headers: bearer(theirs.accessToken) })).statusCode, 200);
    });

    it('logout signs the device out', async () => {
      const s = await signIn(t);
      const res = await t.app.inject({ method: 'POST', url: '/api/auth/logout', headers: bearer(s.accessToken) });
      assert.equal(res.statusCode, 204);
      assert.equal((await t.app.inject({ url: '/api/users/me', headers: bearer(s.accessToken) })).statusCode, 401);
      assert.equal((await refresh(s.refreshToken)).statusCode, 401);
      assert.equal((await t.app.inject({ method: 'POST', url: '/api/auth/logout' })).statusCode, 401);
    });

    it('rejects tampered, foreign and expired access tokens', async () => {
      const [header, payload] = session.accessToken.split('.');
      const forged = `${header}.${payload}.${'A'.repeat(43)}`;
      for (const token of [forged, 'abc', session.refreshToken]) {
        const res = await t.app.inject({ url: '/api/users/me', headers: bearer(token) });
        assert.equal(res.statusCode, 401, token);
      }
      const short = await startTestApp({ ACCESS_TOKEN_TTL: '1', JWT_SECRET: t.config.JWT_SECRET, MONGODB_DB: t.config.MONGODB_DB });
      try {
        const s = await signIn(short);
        short.clock.advance(2100);
        const res = await short.app.inject({ url: '/api/users/me', headers: bearer(s.accessToken) });
        assert.equal(res.statusCode, 401);
        assert.equal(res.json().code, 'TOKEN_EXPIRED');
      } finally {
        await short.app.close();
        await short.ctx.close();
      }
    });
  });
});
