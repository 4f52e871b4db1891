import assert from 'node:assert/strict';
import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { bearer, freshPhone, lastCode, signIn, startTestApp, type Session, type TestApp } from '../helpers/app.js';
import { DeviceClient, spawnHub, type HubProcess } from '../helpers/hubs.js';

type Kind = 'ECDSA_P256' | 'ED25519';

/** A device key made here, as a phone's secure enclave (P-256) or a software keystore (Ed25519) would. */
function deviceKey(kind: Kind, raw = false) {
  const { privateKey, publicKey } = kind === 'ECDSA_P256' ? generateKeyPairSync('ec', { namedCurve: 'P-256' }) : generateKeyPairSync('ed25519');
  const spki = publicKey.export({ format: 'der', type: 'spki' });
  // Raw forms: the 65-byte uncompressed point (iOS) or the 32-byte Ed25519 key.
  const encoded = raw ? spki.subarray(kind === 'ECDSA_P256' ? spki.length - 65 : spki.length - 32) : spki;
  return {
    kind,
    publicKey: encoded.toString('base64'),
    sign: (message: string) => signWith(privateKey, kind, message),
  };
}

function signWith(privateKey: KeyObject, kind: Kind, message: string): string {
  return sign(kind === 'ECDSA_P256' ? 'sha256' : null, Buffer.from(message), privateKey).toString('base64');
}

describe('biometric keys', () => {
  let t: TestApp;
  let hub: HubProcess;
  before(async () => {
    t = await startTestApp();
    hub = await spawnHub(t.config);
  });
  after(async () => {
    await hub.kill();
    await t.close();
  });

  const nonce = async (s: Session) => {
    const res = await t.app.inject({ method: 'POST', url: '/api/devices/biometric-key/nonce', headers: bearer(s.accessToken) });
    assert.equal(res.statusCode, 200);
    return res.json().nonce as string;
  };
  const put = (s: Session, payload: object) => t.app.inject({ method: 'PUT', url: '/api/devices/biometric-key', headers: bearer(s.accessToken), payload });
  const del = (s: Session, payload?: object) =>
    t.app.inject({ method: 'DELETE', url: '/api/devices/biometric-key', headers: bearer(s.accessToken), ...(payload ? { payload } : {}) });
  const enrolled = async (s: Session) => (await t.db.collection('devices').findOne({ _id: s.deviceId as never }))?.biometricKey ?? null;
  const enroll = async (s: Session, key: ReturnType<typeof deviceKey>, extra: object = {}) => {
    const n = await nonce(s);
    return put(s, { publicKey: key.publicKey, algorithm: key.kind, nonce: n, signature: key.sign(`BIOMETRIC_KEY_ENROLL_V1|${n}`), ...extra });
  };

  for (const kind of ['ECDSA_P256', 'ED25519'] as Kind[]) {
    it(`${kind}: none → enrolled with a signature over a fresh nonce; replay and wrong signatures refused`, async () => {
      const s = await signIn(t);
      const key = deviceKey(kind);
      const n = await nonce(s);
      const wrongMessage = await put(s, { publicKey: key.publicKey, algorithm: kind, nonce: n, signature: key.sign(`BIOMETRIC_KEY_CHANGE_V1|REPLACE|${n}`) });
      assert.equal(wrongMessage.statusCode, 400);
      assert.equal(wrongMessage.json().code, 'BIOMETRIC_SIGNATURE_INVALID');
      // That nonce is used up now, even by a failed attempt.
      const replay = await put(s, { publicKey: key.publicKey, algorithm: kind, nonce: n, signature: key.sign(`BIOMETRIC_KEY_ENROLL_V1|${n}`) });
      assert.equal(replay.json().code, 'BIOMETRIC_NONCE_INVALID');
      const other = deviceKey(kind);
      const n2 = await nonce(s);
      const notPossessed = await put(s, { publicKey: key.publicKey, algorithm: kind, nonce: n2, signature: other.sign(`BIOMETRIC_KEY_ENROLL_V1|${n2}`) });
      assert.equal(notPossessed.json().code, 'BIOMETRIC_SIGNATURE_INVALID');
      assert.equal(await enrolled(s), null);

      assert.equal((await enroll(s, key)).statusCode, 204);
      const stored = await enrolled(s);
      assert.equal(stored.algorithm, kind);
    });
  }

  it('accepts raw public keys as phones export them, and refuses keys of the wrong kind', async () => {
    for (const kind of ['ECDSA_P256', 'ED25519'] as Kind[]) {
      const s = await signIn(t);
      assert.equal((await enroll(s, deviceKey(kind, true))).statusCode, 204, kind);
    }
    const s = await signIn(t);
    const ed = deviceKey('ED25519');
    const n = await nonce(s);
    const mismatch = await put(s, { publicKey: ed.publicKey, algorithm: 'ECDSA_P256', nonce: n, signature: ed.sign(`BIOMETRIC_KEY_ENROLL_V1|${n}`) });
    assert.equal(mismatch.json().code, 'BIOMETRIC_KEY_INVALID');
    assert.equal((await put(s, { publicKey: 'not base64!', algorithm: 'ED25519', nonce: n, signature: 'AAAA' })).statusCode, 400);
  });

  it('a nonce belongs to the device it was issued to', async () => {
    const phone = freshPhone();
    const a = await signIn(t, phone);
    const b = await signIn(t, phone);
    const key = deviceKey('ED25519');
    const n = await nonce(a);
    const res = await put(b, { publicKey: key.publicKey, algorithm: 'ED25519', nonce: n, signature: key.sign(`BIOMETRIC_KEY_ENROLL_V1|${n}`) });
    assert.equal(res.json().code, 'BIOMETRIC_NONCE_INVALID');
  });

  it('enrolled → replace: 403 without proof or with a bad one; currentKeySignature or a code work', async () => {
    const s = await signIn(t);
    const first = deviceKey('ECDSA_P256');
    await enroll(s, first);
    const second = deviceKey('ED25519');

    const none = await enroll(s, second);
    assert.equal(none.statusCode, 403);
    assert.equal(none.json().code, 'BIOMETRIC_PROOF_REQUIRED');
    const n = await nonce(s);
    const wrongAction = await put(s, {
      publicKey: second.publicKey,
      algorithm: 'ED25519',
      nonce: n,
      signature: second.sign(`BIOMETRIC_KEY_ENROLL_V1|${n}`),
      currentKeySignature: first.sign(`BIOMETRIC_KEY_CHANGE_V1|REMOVE|${n}`),
    });
    assert.equal(wrongAction.statusCode, 403);
    assert.equal(wrongAction.json().code, 'BIOMETRIC_PROOF_INVALID');
    const byNewKey = await nonce(s);
    const selfSigned = await put(s, {
      publicKey: second.publicKey,
      algorithm: 'ED25519',
      nonce: byNewKey,
      signature: second.sign(`BIOMETRIC_KEY_ENROLL_V1|${byNewKey}`),
      currentKeySignature: second.sign(`BIOMETRIC_KEY_CHANGE_V1|REPLACE|${byNewKey}`),
    });
    assert.equal(selfSigned.statusCode, 403);
    assert.equal((await enrolled(s)).algorithm, 'ECDSA_P256');

    const good = await nonce(s);
    const replaced = await put(s, {
      publicKey: second.publicKey,
      algorithm: 'ED25519',
      nonce: good,
      signature: second.sign(`BIOMETRIC_KEY_ENROLL_V1|${good}`),
      currentKeySignature: first.sign(`BIOMETRIC_KEY_CHANGE_V1|REPLACE|${good}`),
    });
    assert.equal(replaced.statusCode, 204);
    assert.equal((await enrolled(s)).algorithm, 'ED25519');

    // By a texted code instead of the old key.
    const third = deviceKey('ECDSA_P256');
    assert.equal((await t.app.inject({ method: 'POST', url: '/api/devices/biometric-key/code', headers: bearer(s.accessToken) })).statusCode, 204);
    const me = (await t.app.inject({ url: '/api/users/me', headers: bearer(s.accessToken) })).json();
    const code = await lastCode(t.outbox, me.phone);
    assert.equal((await enroll(s, third, { code })).statusCode, 204);
    // A code is good once.
    assert.equal((await enroll(s, deviceKey('ED25519'), { code })).statusCode, 403);
  });

  it('enrolled → none with the enrolled key\'s signature; the account\'s devices are told; none → 204', async () => {
    const phone = freshPhone();
    const s = await signIn(t, phone, { name: 'Main phone', platform: 'IOS' });
    const other = await signIn(t, phone, { name: 'Tablet', platform: 'ANDROID' });
    const tablet = new DeviceClient(other.accessToken);
    await tablet.connect(hub.port);
    try {
      assert.equal((await del(s)).statusCode, 204);
      const key = deviceKey('ED25519');
      await enroll(s, key);

      assert.equal((await del(s)).json().code, 'BIOMETRIC_PROOF_REQUIRED');
      const n = await nonce(s);
      const replaceProof = await del(s, { nonce: n, signature: key.sign(`BIOMETRIC_KEY_CHANGE_V1|REPLACE|${n}`) });
      assert.equal(replaceProof.statusCode, 403);
      const stale = await del(s, { nonce: n, signature: key.sign(`BIOMETRIC_KEY_CHANGE_V1|REMOVE|${n}`) });
      assert.equal(stale.statusCode, 403, 'a used nonce cannot be replayed');
      assert.ok(await enrolled(s));

      const fresh = await nonce(s);
      assert.equal((await del(s, { nonce: fresh, signature: key.sign(`BIOMETRIC_KEY_CHANGE_V1|REMOVE|${fresh}`) })).statusCode, 204);
      assert.equal(await enrolled(s), null);
      await tablet.until((r) => r.some((e) => e.event === 'device.biometric-key-removed'));
      assert.deepEqual(tablet.received.find((e) => e.event === 'device.biometric-key-removed')!.data, { deviceId: s.deviceId, name: 'Main phone' });
      assert.equal((await del(s)).statusCode, 204);
    } finally {
      tablet.close();
    }
  });

  it('429 once too many wrong codes were entered for the account\'s number', async () => {
    const s = await signIn(t);
    await enroll(s, deviceKey('ED25519'));
    await t.app.inject({ method: 'POST', url: '/api/devices/biometric-key/code', headers: bearer(s.accessToken) });
    const me = (await t.app.inject({ url: '/api/users/me', headers: bearer(s.accessToken) })).json();
    const code = await lastCode(t.outbox, me.phone);
    const wrong = code === '000000' ? '111111' : '000000';
    for (let i = 0; i < 5; i++) assert.equal((await del(s, { code: wrong })).statusCode, 403);
    const limited = await del(s, { code });
    assert.equal(limited.statusCode, 429);
    assert.equal(limited.json().code, 'TOO_MANY_CODE_ATTEMPTS');
    assert.ok(Number(limited.headers['retry-after']) > 0);
    assert.ok(await enrolled(s), 'the key stays');
  });

  it('enrolled → none with a texted code instead of the key\'s signature', async () => {
    const s = await signIn(t);
    await enroll(s, deviceKey('ED25519'));
    assert.equal((await t.app.inject({ method: 'POST', url: '/api/devices/biometric-key/code', headers: bearer(s.accessToken) })).statusCode, 204);
    const me = (await t.app.inject({ url: '/api/users/me', headers: bearer(s.accessToken) })).json();
    const removed = await del(s, { code: await lastCode(t.outbox, me.phone) });
    assert.equal(removed.statusCode, 204, removed.body);
    assert.equal(await enrolled(s), null);
  });

  it('429 TOO_MANY_CODES with Retry-After past 5 texted codes in the window', async () => {
    const s = await signIn(t);
    await enroll(s, deviceKey('ED25519'));
    const ask = () => t.app.inject({ method: 'POST', url: '/api/devices/biometric-key/code', headers: bearer(s.accessToken) });
    for (let i = 0; i < 5; i++) assert.equal((await ask()).statusCode, 204, `code ${i + 1}`);
    const limited = await ask();
    assert.equal(limited.statusCode, 429);
    assert.equal(limited.json().code, 'TOO_MANY_CODES');
    assert.ok(Number(limited.headers['retry-after']) > 0);
  });

  it('the confirmation check: passes once for the exact signed bytes, never on replay, wrong bytes or another key', async () => {
    const { biometric } = t.ctx.services;
    const s = await signIn(t);
    const principal = { userId: s.userId, deviceId: s.deviceId };
    // Without a key nothing is required.
    assert.equal(await biometric.confirm(principal, { message: Buffer.from('x') }), 'NOT_REQUIRED');

    const key = deviceKey('ECDSA_P256');
    await enroll(s, key);
    const n = (await biometric.issueNonce(principal)).nonce;
    const message = Buffer.from(`BIOMETRIC_CONFIRM_V1|${n}|WITHDRAW|wallet-1|12.50|USDT`);
    const signature = key.sign(message.toString());

    await assert.rejects(biometric.confirm(principal, { message }), (e: { status: number; code: string }) => e.status === 403 && e.code === 'BIOMETRIC_CONFIRMATION_REQUIRED');
    const tampered = Buffer.from(`BIOMETRIC_CONFIRM_V1|${n}|WITHDRAW|wallet-1|99.50|USDT`);
    await assert.rejects(biometric.confirm(principal, { message: tampered, signature, nonce: n }), (e: { status: number }) => e.status === 403);
    // The tampered attempt used the nonce up: even the right signature fails now.
    await assert.rejects(biometric.confirm(principal, { message, signature, nonce: n }), (e: { status: number }) => e.status === 403);

    const n2 = (await biometric.issueNonce(principal)).nonce;
    const message2 = Buffer.from(`BIOMETRIC_CONFIRM_V1|${n2}|SWAP|q-1`);
    await assert.rejects(biometric.confirm(principal, { message: message2, signature: deviceKey('ECDSA_P256').sign(message2.toString()), nonce: n2 }), (e: { status: number }) => e.status === 403);
    const n3 = (await biometric.issueNonce(principal)).nonce;
    const message3 = Buffer.from(`BIOMETRIC_CONFIRM_V1|${n3}|SWAP|q-1`);
    const sig3 = key.sign(message3.toString());
    assert.equal(await biometric.confirm(principal, { message: message3, signature: sig3, nonce: n3 }), 'CONFIRMED');
    await assert.rejects(biometric.confirm(principal, { message: message3, signature: sig3, nonce: n3 }), (e: { status: number }) => e.status === 403);
    // Bytes that do not carry the nonce they claim are refused before the nonce is spent.
    const n4 = (await biometric.issueNonce(principal)).nonce;
    await assert.rejects(biometric.confirm(principal, { message: message3, signature: sig3, nonce: n4 }), (e: { status: number }) => e.status === 403);
  });
});
