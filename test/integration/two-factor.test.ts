import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { bearer, freshPhone, lastCode, signIn, startTestApp, type Session, type TestApp } from '../helpers/app.js';
import { totp } from '../helpers/totp.js';

/** A code for `secret` that is not the one for the current step: wrong, but well-formed. */
function wrongCode(secret: string, at: number): string {
  const valid = new Set([-30_000, 0, 30_000].map((offset) => totp(secret, at + offset)));
  for (let n = 0; ; n++) {
    const candidate = String(n).padStart(6, '0');
    if (!valid.has(candidate)) return candidate;
  }
}

const STEP = 30_000;

describe('two-factor authentication', () => {
  let t: TestApp;
  /** The service's time: codes are computed for it. */
  const now = () => t.clock().getTime();
  /**
   * Moves the service's clock forward to the middle of a 30-second step, so that a test can use the
   * codes of the previous, current and next step (the server accepts one step of drift either way)
   * in increasing order within one step, as three distinct one-time codes.
   */
  const settleInStep = () => {
    const into = now() % STEP;
    t.clock.advance(into <= STEP / 2 ? STEP / 2 - into : STEP - into + STEP / 2);
  };
  before(async () => {
    t = await startTestApp();
  });
  after(() => t.close());

  const post = (session: Session, url: string) => t.app.inject({ method: 'POST', url, headers: bearer(session.accessToken) });
  const setup = async (session: Session) => {
    const res = await post(session, '/api/users/2fa/setup');
    assert.equal(res.statusCode, 200);
    return res.json() as { secret: string; otpauthUri: string };
  };
  const storedSecret = async (userId: string) => (await t.db.collection('users').findOne({ _id: userId as never }))?.twoFactor as { secret: string | null; enabled: boolean };

  it('setup gives a secret and an otpauth URI carrying it', async () => {
    const session = await signIn(t);
    const { secret, otpauthUri } = await setup(session);
    assert.match(secret, /^[A-Z2-7]{16,}$/);
    const uri = new URL(otpauthUri);
    assert.equal(uri.protocol, 'otpauth:');
    assert.equal(uri.host, 'totp');
    assert.equal(uri.searchParams.get('secret'), secret);
    assert.equal(uri.searchParams.get('issuer'), 'Chat Platform');
  });

  it('off → enable with a wrong code: 400, stays off', async () => {
    const session = await signIn(t);
    const { secret } = await setup(session);
    const res = await post(session, `/api/users/2fa/enable?code=${wrongCode(secret, now())}`);
    assert.equal(res.statusCode, 400);
    assert.equal(res.json().code, 'TWO_FACTOR_CODE_INVALID');
    assert.equal((await storedSecret(session.userId)).enabled, false);
  });

  it('off → enable with a non-numeric or short code: 400, stays off', async () => {
    const session = await signIn(t);
    await setup(session);
    for (const code of ['abcdef', '12345', '1234567', '']) {
      const res = await post(session, `/api/users/2fa/enable?code=${code}`);
      assert.equal(res.statusCode, 400, code);
      assert.equal(res.json().code, 'VALIDATION_FAILED');
    }
    assert.equal((await post(session, '/api/users/2fa/enable')).statusCode, 400);
    assert.equal((await storedSecret(session.userId)).enabled, false);
  });

  it('off → enable before any setup: 400', async () => {
    const session = await signIn(t);
    const res = await post(session, '/api/users/2fa/enable?code=123456');
    assert.equal(res.statusCode, 400);
    assert.equal(res.json().code, 'TWO_FACTOR_NOT_SET_UP');
  });

  it('the whole life: enable, sign in with the TOTP step, disable, old authenticator entry dead', async () => {
    const phone = freshPhone();
    const session = await signIn(t, phone);
    const { secret } = await setup(session);
    settleInStep();
    const base = now();

    // off → on with a correct code: the user comes back with two-factor on.
    const enabled = await post(session, `/api/users/2fa/enable?code=${totp(secret, base - STEP)}`);
    assert.equal(enabled.statusCode, 200);
    assert.equal(enabled.json().twoFactorEnabled, true);

    // on → enable again: nothing changes, the secret in force stays.
    const again = await post(session, `/api/users/2fa/enable?code=${wrongCode(secret, now())}`);
    assert.equal(again.statusCode, 200);
    assert.equal(again.json().twoFactorEnabled, true);
    assert.equal((await storedSecret(session.userId)).secret, secret);

    // Setup while on is refused, so the secret in force cannot be swapped behind the user's back.
    assert.equal((await post(session, '/api/users/2fa/setup')).statusCode, 400);

    // Sign-in now needs the second step.
    await t.app.inject({ method: 'POST', url: '/api/auth/code', payload: { phone } });
    const first = await t.app.inject({
      method: 'POST',
      url: '/api/auth/login',
      payload: { phone, code: await lastCode(t.outbox, phone), device: { name: 'New phone', platform: 'IOS' } },
    });
    assert.equal(first.statusCode, 200);
    assert.equal(first.json().twoFactorRequired, true);
    assert.equal(first.json().accessToken, undefined);
    const { twoFactorToken } = first.json();

    const bad = await t.app.inject({ method: 'POST', url: '/api/auth/2fa', payload: { twoFactorToken, code: wrongCode(secret, now()) } });
    assert.equal(bad.statusCode, 400);
    assert.equal(bad.json().code, 'TWO_FACTOR_CODE_INVALID');

    // A code is good once: the step used to enable cannot sign in.
    const replayed = await t.app.inject({ method: 'POST', url: '/api/auth/2fa', payload: { twoFactorToken, code: totp(secret, base - STEP) } });
    assert.equal(replayed.statusCode, 400);
    const good = await t.app.inject({ method: 'POST', url: '/api/auth/2fa', payload: { twoFactorToken, code: totp(secret, base) } });
    assert.equal(good.statusCode, 200);
    const tokens = good.json();
    assert.equal(tokens.userId, session.userId);
    assert.equal((await t.app.inject({ url: '/api/users/me', headers: bearer(tokens.accessToken) })).statusCode, 200);

    // The challenge token starts one session only.
    const reuse = await t.app.inject({ method: 'POST', url: '/api/auth/2fa', payload: { twoFactorToken, code: totp(secret, base + STEP) } });
    assert.equal(reuse.statusCode, 401);
    assert.equal(reuse.json().code, 'TWO_FACTOR_TOKEN_INVALID');

    // on → disable with a wrong code: 400, stays on.
    const wrongDisable = await post(session, `/api/users/2fa/disable?code=${wrongCode(secret, now())}`);
    assert.equal(wrongDisable.statusCode, 400);
    assert.equal((await storedSecret(session.userId)).enabled, true);
    assert.equal((await post(session, '/api/users/2fa/disable?code=abc123')).statusCode, 400);

    // on → off with a correct code; the stored secret is replaced.
    const disabled = await post(session, `/api/users/2fa/disable?code=${totp(secret, base + STEP)}`);
    assert.equal(disabled.statusCode, 200);
    assert.equal(disabled.json().twoFactorEnabled, false);
    const stored = await storedSecret(session.userId);
    assert.equal(stored.enabled, false);
    assert.ok(stored.secret && stored.secret !== secret);

    // off → disable again: nothing changes.
    const offAgain = await post(session, `/api/users/2fa/disable?code=${totp(secret, now())}`);
    assert.equal(offAgain.statusCode, 200);
    assert.equal(offAgain.json().twoFactorEnabled, false);

    // The old authenticator entry no longer turns it on: a new setup has a new secret.
    const fresh = await setup(session);
    assert.notEqual(fresh.secret, secret);
    const oldEntry = await post(session, `/api/users/2fa/enable?code=${totp(secret, now())}`);
    if (totp(secret, now()) !== totp(fresh.secret, now())) assert.equal(oldEntry.statusCode, 400);

    // And sign-in is back to one step.
    await t.app.inject({ method: 'POST', url: '/api/auth/code', payload: { phone } });
    const single = await t.app.inject({
      method: 'POST',
      url: '/api/auth/login',
      payload: { phone, code: await lastCode(t.outbox, phone), device: { name: 'Third', platform: 'WEB' } },
    });
    assert.ok(single.json().accessToken);
  });

  it('a two-factor challenge allows five wrong codes, then 429; forged challenges get 401', async () => {
    const phone = freshPhone();
    const session = await signIn(t, phone);
    const { secret } = await setup(session);
    assert.equal((await post(session, `/api/users/2fa/enable?code=${totp(secret, now())}`)).statusCode, 200);
    await t.app.inject({ method: 'POST', url: '/api/auth/code', payload: { phone } });
    const first = await t.app.inject({
      method: 'POST',
      url: '/api/auth/login',
      payload: { phone, code: await lastCode(t.outbox, phone), device: { name: 'x', platform: 'IOS' } },
    });
    const { twoFactorToken } = first.json();
    for (let i = 0; i < 5; i++) {
      const res = await t.app.inject({ method: 'POST', url: '/api/auth/2fa', payload: { twoFactorToken, code: wrongCode(secret, now()) } });
      assert.equal(res.statusCode, 400);
    }
    const blocked = await t.app.inject({ method: 'POST', url: '/api/auth/2fa', payload: { twoFactorToken, code: totp(secret, now()) } });
    assert.equal(blocked.statusCode, 429);
    assert.ok(Number(blocked.headers['retry-after']) > 0);

    const forged = await t.app.inject({ method: 'POST', url: '/api/auth/2fa', payload: { twoFactorToken: session.accessToken, code: totp(secret, now()) } });
    assert.equal(forged.statusCode, 401);
    assert.equal(forged.json().code, 'TWO_FACTOR_TOKEN_INVALID');
  });
});
