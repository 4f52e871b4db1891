import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { bearer, freshPhone, signIn, startTestApp, type Session, type TestApp } from '../helpers/app.js';

describe('users and devices', () => {
  let t: TestApp;
  let session: Session;
  const adminPhone = freshPhone();
  before(async () => {
    t = await startTestApp({ ADMIN_PHONES: adminPhone });
    session = await signIn(t);
  });
  after(() => t.close());

  it('updates the profile and returns the User', async () => {
    const res = await t.app.inject({ method: 'PATCH', url: '/api/users/me', headers: bearer(session.accessToken), payload: { displayName: '  Ada  ', language: 'pt-BR' } });
    assert.equal(res.statusCode, 200);
    assert.equal(res.json().displayName, 'Ada');
    assert.equal(res.json().language, 'pt-BR');
    const me = await t.app.inject({ url: '/api/users/me', headers: bearer(session.accessToken) });
    assert.equal(me.json().displayName, 'Ada');
    assert.equal(me.json().admin, false);
  });

  it('marks the numbers in ADMIN_PHONES as site administrators', async () => {
    const admin = await signIn(t, adminPhone);
    const me = await t.app.inject({ url: '/api/users/me', headers: bearer(admin.accessToken) });
    assert.equal(me.json().admin, true);
  });

  it('shows another user without their phone number', async () => {
    const other = await signIn(t);
    await t.app.inject({ method: 'PATCH', url: '/api/users/me', headers: bearer(other.accessToken), payload: { displayName: 'Grace' } });
    const res = await t.app.inject({ url: `/api/users/${other.userId}`, headers: bearer(session.accessToken) });
    assert.equal(res.statusCode, 200);
    assert.deepEqual(res.json(), { id: other.userId, deleted: false, displayName: 'Grace', avatarUrl: null, avatarThumbnailUrl: null });
  });

  it('stores push and VoIP tokens on the token\'s own device only, and clears them with null', async () => {
    const phone = freshPhone();
    const a = await signIn(t, phone, { name: 'A', platform: 'IOS' });
    const b = await signIn(t, phone, { name: 'B', platform: 'ANDROID' });
    const push = await t.app.inject({ method: 'PUT', url: '/api/devices/push-token', headers: bearer(a.accessToken), payload: { token: 'apns-token-0123456789', provider: 'APNS' } });
    assert.equal(push.statusCode, 204);
    const voip = await t.app.inject({ method: 'PUT', url: '/api/devices/voip-push-token', headers: bearer(a.accessToken), payload: { token: 'voip-token-0123456789' } });
    assert.equal(voip.statusCode, 204);

    const devices = t.db.collection('devices');
    const stored = await devices.findOne({ _id: a.deviceId as never });
    assert.equal(stored?.pushToken?.token, 'apns-token-0123456789');
    assert.equal(stored?.pushToken?.provider, 'APNS');
    assert.equal(stored?.voipPushToken?.token, 'voip-token-0123456789');
    assert.equal((await devices.findOne({ _id: b.deviceId as never }))?.pushToken, null);

    const list = await t.app.inject({ url: '/api/devices', headers: bearer(b.accessToken) });
    const mine = list.json().find((d: { id: string }) => d.id === a.deviceId);
    assert.equal(mine.pushEnabled, true);
    assert.equal(mine.voipPushEnabled, true);

    await t.app.inject({ method: 'PUT', url: '/api/devices/push-token', headers: bearer(a.accessToken), payload: { token: null } });
    assert.equal((await devices.findOne({ _id: a.deviceId as never }))?.pushToken, null);
  });

  it('finds a user\'s devices through their list: a revoked device leaves it, and an id listed wrongly is not trusted', async () => {
    const phone = freshPhone();
    const [a, b, c] = [await signIn(t, phone, { name: 'A', platform: 'IOS' }), await signIn(t, phone, { name: 'B', platform: 'IOS' }), await signIn(t, phone, { name: 'C', platform: 'ANDROID' })];
    const stranger = await signIn(t);
    const list = async () => (await t.db.collection('user_devices').findOne({ _id: a.userId as never }))?.deviceIds as string[];
    assert.deepEqual(new Set(await list()), new Set([a.deviceId, b.deviceId, c.deviceId]));
    const listed = async () => (await t.app.inject({ url: '/api/devices', headers: bearer(a.accessToken) })).json().map((device: { id: string }) => device.id);
    assert.deepEqual(await listed(), [c.deviceId, b.deviceId, a.deviceId], 'newest first');

    assert.equal((await t.app.inject({ method: 'DELETE', url: `/api/devices/${b.deviceId}`, headers: bearer(a.accessToken) })).statusCode, 204);
    assert.deepEqual(new Set(await list()), new Set([a.deviceId, c.deviceId]));
    assert.deepEqual(await listed(), [c.deviceId, a.deviceId]);

    // A list naming another user's device, one that does not exist, and a revoked one (as a crash
    // between a write and the list's could leave it): none of them is the user's.
    await t.db.collection<{ _id: string; deviceIds: string[] }>('user_devices').updateOne({ _id: a.userId }, { $push: { deviceIds: { $each: [stranger.deviceId, 'no-such-device', b.deviceId] } } });
    assert.deepEqual(await listed(), [c.deviceId, a.deviceId]);
    await t.app.inject({ method: 'PUT', url: '/api/devices/push-token', headers: bearer(stranger.accessToken), payload: { token: 'fcm-stranger-token' } });
    await t.app.inject({ method: 'PUT', url: '/api/devices/push-token', headers: bearer(c.accessToken), payload: { token: 'fcm-own-token-c' } });
    const pushable = await t.ctx.repos.devices.pushableOf([a.userId]);
    assert.deepEqual(pushable.map((device) => [device._id, device.userId, device.pushToken?.token]), [[c.deviceId, a.userId, 'fcm-own-token-c']]);
  });

  it('refuses bad push tokens with 400 and keeps the old one', async () => {
    await t.app.inject({ method: 'PUT', url: '/api/devices/push-token', headers: bearer(session.accessToken), payload: { token: 'fcm-token-abcdefgh' } });
    for (const payload of [{ token: 'short' }, { token: 'x'.repeat(5000) }, { token: 'valid-length-token', provider: 'SMOKE' }, {}]) {
      const res = await t.app.inject({ method: 'PUT', url: '/api/devices/push-token', headers: bearer(session.accessToken), payload });
      assert.equal(res.statusCode, 400, JSON.stringify(payload).slice(0, 40));
    }
    const stored = await t.db.collection('devices').findOne({ _id: session.deviceId as never });
    assert.equal(stored?.pushToken?.token, 'fcm-token-abcdefgh');
    assert.equal(stored?.pushToken?.provider, 'FCM');
  });
});
