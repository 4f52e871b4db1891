import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import http from 'node:http';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { decodeProtectedHeader, jwtVerify } from 'jose';
import { ApnsPushProvider } from '../../src/push/apns.provider.js';
import { FcmPushProvider } from '../../src/push/fcm.provider.js';
import { bearer, freshPhone, signIn, startTestApp } from '../helpers/app.js';

const alert = { kind: 'alert' as const, alert: { title: 'New sign-in', body: 'Pixel signed in' }, data: { event: 'device.added', seq: '3' }, ttlSeconds: 60 };

describe('APNs adapter against an HTTP/2 server speaking the APNs protocol', () => {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  let server: http2.Http2Server;
  let origin: string;
  const seen: { headers: http2.IncomingHttpHeaders; body: Record<string, unknown> }[] = [];

  before(async () => {
    server = http2.createServer();
    server.on('stream', (stream, headers) => {
      let text = '';
      stream.on('data', (chunk: Buffer) => (text += chunk.toString()));
      stream.on('end', async () => {
        seen.push({ headers, body: JSON.parse(text) as Record<string, unknown> });
        const token = String(headers[':path']).split('/').at(-1);
        const auth = String(headers.authorization ?? '').replace(/^bearer /, '');
        try {
          const { payload } = await jwtVerify(auth, publicKey, { issuer: 'TEAM123456', algorithms: ['ES256'] });
          assert.ok(payload.iat);
          assert.equal(decodeProtectedHeader(auth).kid, 'KEY1234567');
        } catch {
          stream.respond({ ':status': 403 });
          return stream.end(JSON.stringify({ reason: 'InvalidProviderToken' }));
        }
        if (token === 'gone') {
          stream.respond({ ':status': 410 });
          return stream.end(JSON.stringify({ reason: 'Unregistered', timestamp: Date.now() }));
        }
        if (token === 'bad') {
          stream.respond({ ':status': 400 });
          return stream.end(JSON.stringify({ reason: 'BadDeviceToken' }));
        }
        if (token === 'busy') {
          stream.respond({ ':status': 503 });
          return stream.end(JSON.stringify({ reason: 'ServiceUnavailable' }));
        }
        stream.respond({ ':status': 200, 'apns-id': '00000000-0000-0000-0000-000000000001' });
        stream.end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const provider = () =>
    new ApnsPushProvider({
      keyId: 'KEY1234567',
      teamId: 'TEAM123456',
      privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
      bundleId: 'com.example.chat',
      origin,
    });

  it('sends an alert with a valid ES256 provider token, topic and push type', async () => {
    const apns = provider();
    assert.deepEqual(await apns.send({ token: 'device-token-1', service: 'APNS' }, alert), { ok: true });
    const last = seen.at(-1)!;
    assert.equal(last.headers[':path'], '/3/device/device-token-1');
    assert.equal(last.headers['apns-topic'], 'com.example.chat');
    assert.equal(last.headers['apns-push-type'], 'alert');
    assert.deepEqual(last.body.aps, { alert: { title: 'New sign-in', body: 'Pixel signed in' }, sound: 'default', 'mutable-content': 1 });
    assert.equal(last.body.event, 'device.added');
    await apns.close();
  });

  it('carries a message push\'s badge and collapse id (issue 23)', async () => {
    const apns = provider();
    const push = { kind: 'alert' as const, alert: { title: 'Hikers', body: 'Olga: hi' }, data: { event: 'message.new', roomId: 'r1', messageId: 'm1' }, ttlSeconds: 60, collapseId: 'r1', badge: 7 };
    assert.deepEqual(await apns.send({ token: 'device-token-2', service: 'APNS' }, push), { ok: true });
    const last = seen.at(-1)!;
    assert.deepEqual(last.body.aps, { alert: { title: 'Hikers', body: 'Olga: hi' }, sound: 'default', 'mutable-content': 1, badge: 7 });
    assert.equal(last.headers['apns-collapse-id'], 'r1');
    assert.equal(last.body.messageId, 'm1');
    await apns.close();
  });

  it('sends VoIP pushes to the .voip topic', async () => {
    const apns = provider();
    const result = await apns.send({ token: 'voip-token-1', service: 'APNS' }, { kind: 'voip', data: { callId: 'c1' }, ttlSeconds: 30, collapseId: 'c1' });
    assert.deepEqual(result, { ok: true });
    const last = seen.at(-1)!;
    assert.equal(last.headers['apns-topic'], 'com.example.chat.voip');
    assert.equal(last.headers['apns-push-type'], 'voip');
    assert.equal(last.headers['apns-collapse-id'], 'c1');
    assert.equal(last.body.callId, 'c1');
    await apns.close();
  });

  it('reports dead tokens as invalid and outages as retryable', async () => {
    const apns = provider();
    assert.deepEqual(await apns.send({ token: 'gone', service: 'APNS' }, alert), { ok: false, tokenInvalid: true, reason: 'Unregistered' });
    assert.deepEqual(await apns.send({ token: 'bad', service: 'APNS' }, alert), { ok: false, tokenInvalid: true, reason: 'BadDeviceToken' });
    assert.deepEqual(await apns.send({ token: 'busy', service: 'APNS' }, alert), { ok: false, tokenInvalid: false, reason: 'ServiceUnavailable' });
    await apns.close();
  });
});

describe('FCM HTTP v1 adapter against a server speaking the OAuth and FCM protocols', () => {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  let server: http.Server;
  let base: string;
  const sends: { authorization?: string; body: { message: Record<string, unknown> } }[] = [];
  let tokenExchanges = 0;

  before(async () => {
    server = http.createServer((req, res) => {
      let text = '';
      req.on('data', (chunk) => (text += chunk));
      req.on('end', async () => {
        res.setHeader('content-type', 'application/json');
        if (req.url === '/token') {
          const form = new URLSearchParams(text);
          try {
            assert.equal(form.get('grant_type'), 'urn:ietf:params:oauth:grant-type:jwt-bearer');
            const { payload } = await jwtVerify(form.get('assertion')!, publicKey, { issuer: 'push@project.iam.gserviceaccount.com', audience: `${base}/token` });
            assert.equal(payload.scope, 'https://www.googleapis.com/auth/firebase.messaging');
          } catch {
            res.statusCode = 400;
            return res.end(JSON.stringify({ error: 'invalid_grant' }));
          }
          tokenExchanges++;
          return res.end(JSON.stringify({ access_token: 'ya29.test-access-token', expires_in: 3600, token_type: 'Bearer' }));
        }
        if (req.url === '/v1/projects/chat-project/messages:send') {
          const body = JSON.parse(text) as { message: { token: string } };
          sends.push({ authorization: req.headers.authorization, body });
          if (req.headers.authorization !== 'Bearer ya29.test-access-token') {
            res.statusCode = 401;
            return res.end(JSON.stringify({ error: { status: 'UNAUTHENTICATED' } }));
          }
          if (body.message.token === 'dead') {
            res.statusCode = 404;
            return res.end(JSON.stringify({ error: { status: 'NOT_FOUND', details: [{ '@type': 'type.googleapis.com/google.firebase.fcm.v1.FcmError', errorCode: 'UNREGISTERED' }] } }));
          }
          return res.end(JSON.stringify({ name: 'projects/chat-project/messages/1' }));
        }
        res.statusCode = 404;
        res.end('{}');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const provider = () =>
    new FcmPushProvider(
      {
        project_id: 'chat-project',
        client_email: 'push@project.iam.gserviceaccount.com',
        private_key: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
        token_uri: `${base}/token`,
      },
      base,
    );

  it('exchanges a signed assertion for an access token once, then sends messages with it', async () => {
    const fcm = provider();
    assert.deepEqual(await fcm.send({ token: 'reg-token-1', service: 'FCM' }, alert), { ok: true });
    assert.deepEqual(await fcm.send({ token: 'reg-token-2', service: 'FCM' }, alert), { ok: true });
    assert.equal(tokenExchanges, 1);
    const message = sends.at(-1)!.body.message as { token: string; data: Record<string, string>; notification: unknown; android: Record<string, unknown> };
    assert.equal(message.token, 'reg-token-2');
    assert.deepEqual(message.notification, { title: 'New sign-in', body: 'Pixel signed in' });
    assert.deepEqual(message.data, { event: 'device.added', seq: '3' });
    assert.equal(message.android.priority, 'high');
    assert.equal(message.android.ttl, '60s');
  });

  it('carries a message push\'s badge and collapse key (issue 23)', async () => {
    const push = { kind: 'alert' as const, alert: { title: 'Hikers', body: 'Olga: hi' }, data: { event: 'message.new', roomId: 'r1', messageId: 'm1' }, ttlSeconds: 60, collapseId: 'r1', badge: 7 };
    assert.deepEqual(await provider().send({ token: 'reg-token-3', service: 'FCM' }, push), { ok: true });
    const message = sends.at(-1)!.body.message as { android: Record<string, unknown> };
    assert.equal(message.android.collapse_key, 'r1');
    assert.deepEqual(message.android.notification, { notification_count: 7 });
  });

  it('reports an unregistered token as invalid', async () => {
    assert.deepEqual(await provider().send({ token: 'dead', service: 'FCM' }, alert), { ok: false, tokenInvalid: true, reason: 'UNREGISTERED' });
  });
});

describe('push service decisions', () => {
  it('clears dead tokens, skips devices that came online, and events already acknowledged', async () => {
    const t = await startTestApp();
    try {
      const phone = freshPhone();
      const a = await signIn(t, phone, { name: 'A', platform: 'ANDROID' });
      await t.app.inject({ method: 'PUT', url: '/api/devices/push-token', headers: bearer(a.accessToken), payload: { token: 'invalid-registration', provider: 'FCM' } });
      await signIn(t, phone, { name: 'B', platform: 'IOS' });
      // A has device.added as seq 1 in its inbox; the push token is one FCM says is unregistered.
      assert.equal(await t.ctx.services.push.deliver({ deviceId: a.deviceId, seq: 1, kind: 'alert' }), 'token-invalid');
      const device = await t.db.collection('devices').findOne({ _id: a.deviceId as never });
      assert.equal(device?.pushToken, null);
      assert.equal(await t.ctx.services.push.deliver({ deviceId: a.deviceId, seq: 1, kind: 'alert' }), 'no-token');

      await t.app.inject({ method: 'PUT', url: '/api/devices/push-token', headers: bearer(a.accessToken), payload: { token: 'good-registration', provider: 'FCM' } });
      // A hub node beats from its start, then takes the device's socket.
      await t.ctx.services.presenceStore.beat('node-x');
      await t.ctx.services.presenceStore.connect('node-x', a.deviceId);
      assert.equal(await t.ctx.services.push.deliver({ deviceId: a.deviceId, seq: 1, kind: 'alert' }), 'online');
      await t.ctx.services.presenceStore.release('node-x', a.deviceId);
      await t.ctx.services.inbox.ack(a.deviceId, 1);
      assert.equal(await t.ctx.services.push.deliver({ deviceId: a.deviceId, seq: 1, kind: 'alert' }), 'already-handled');
      assert.equal(await t.db.collection('push_records').countDocuments({}), 0);
    } finally {
      await t.close();
    }
  });
});
