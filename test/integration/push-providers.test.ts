import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import http from 'node:http';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { decodeProtectedHeader, jwtVerify } from 'jose';
import { ApnsPushProvider } from '../../src/push/apns.provider.js';
import { FcmPushProvider } from '../../src/push/fcm.provider.js';
import { PacedPushProvider, retryAfterMs } from '../../src/push/pacing.js';
import { bearer, freshPhone, signIn, startTestApp } from '../helpers/app.js';

const alert = { kind: 'alert' as const, alert: { title: 'New sign-in', body: 'Pixel signed in' }, data: { event: 'device.added', seq: '3' }, ttlSeconds: 60 };

describe('APNs adapter against an HTTP/2 server speaking the APNs protocol', () => {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  let server: http2.Http2Server;
  let origin: string;
  const seen: { headers: http2.IncomingHttpHeaders; body: Record<string, unknown> }[] = [];
  /** The next pushes to `paced-` tokens answered 429, and the ones delivered. */
  let apnsRefusals = 0;
  const apnsDelivered: string[] = [];

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
        if (token === 'crowded' || (token?.startsWith('paced-') && apnsRefusals > 0)) {
          if (token !== 'crowded') apnsRefusals--;
          stream.respond({ ':status': 429 });
          return stream.end(JSON.stringify({ reason: 'TooManyRequests' }));
        }
        if (token?.startsWith('paced-')) apnsDelivered.push(token);
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
    assert.deepEqual(await apns.send({ token: 'busy', service: 'APNS' }, alert), { ok: false, tokenInvalid: false, reason: 'ServiceUnavailable', retryAfterMs: 0 });
    assert.deepEqual(await apns.send({ token: 'crowded', service: 'APNS' }, alert), { ok: false, tokenInvalid: false, reason: 'TooManyRequests', retryAfterMs: 0 });
    await apns.close();
  });

  it('paced, a 429 holds every push with a doubling backoff, then sends again what was refused and never what was delivered', async () => {
    const paced = new PacedPushProvider(provider(), { attempts: 6, baseDelayMs: 100, maxDelayMs: 2_000 });
    apnsRefusals = 3;
    const tokens = Array.from({ length: 8 }, (_, i) => `paced-${i}`);
    const started = Date.now();
    const results = await Promise.all(tokens.map((token) => paced.send({ token, service: 'APNS' }, alert)));
    assert.ok(results.every((result) => result.ok), JSON.stringify(results));
    assert.deepEqual([...apnsDelivered].sort(), [...tokens].sort(), 'each push delivered once');
    assert.equal(paced.counts.throttled, 3);
    assert.ok(Date.now() - started >= 100, 'sent again before the backoff');
    // Refused for good after its attempts: the last refusal is the answer.
    const once = new PacedPushProvider(provider(), { attempts: 2, baseDelayMs: 10, maxDelayMs: 100 });
    assert.deepEqual(await once.send({ token: 'crowded', service: 'APNS' }, alert), { ok: false, tokenInvalid: false, reason: 'TooManyRequests', retryAfterMs: 0 });
    assert.equal(once.counts.throttled, 2);
    await paced.close();
    await once.close();
  });
});

describe('FCM HTTP v1 adapter against a server speaking the OAuth and FCM protocols', () => {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  let server: http.Server;
  let base: string;
  const sends: { authorization?: string; body: { message: Record<string, unknown> } }[] = [];
  let tokenExchanges = 0;
  /** The throttling server's quota per second, its current second, and what it refused and delivered. */
  const QUOTA = 10;
  const window = { second: 0, sent: 0, refused: 0 };
  const fcmDelivered: string[] = [];

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
          if (body.message.token === 'over-quota') {
            res.statusCode = 429;
            res.setHeader('retry-after', '7');
            return res.end(JSON.stringify({ error: { status: 'RESOURCE_EXHAUSTED', details: [{ '@type': 'type.googleapis.com/google.firebase.fcm.v1.FcmError', errorCode: 'QUOTA_EXCEEDED' }] } }));
          }
          if (body.message.token === 'down') {
            res.statusCode = 503;
            res.setHeader('retry-after', new Date(Date.now() + 30_000).toUTCString());
            return res.end(JSON.stringify({ error: { status: 'UNAVAILABLE', details: [{ errorCode: 'UNAVAILABLE' }] } }));
          }
          if (body.message.token.startsWith('quota-')) {
            // A quota of QUOTA sends a second: past it, 429 with Retry-After 1 (and the send counts against it).
            const second = Math.floor(Date.now() / 1000);
            if (second !== window.second) Object.assign(window, { second, sent: 0 });
            if (++window.sent > QUOTA) {
              window.refused++;
              res.statusCode = 429;
              res.setHeader('retry-after', '1');
              return res.end(JSON.stringify({ error: { status: 'RESOURCE_EXHAUSTED', details: [{ errorCode: 'QUOTA_EXCEEDED' }] } }));
            }
            fcmDelivered.push(body.message.token);
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

  it('reads when to come back from a 429 or a 503: Retry-After in seconds or as a date', async () => {
    assert.deepEqual(await provider().send({ token: 'over-quota', service: 'FCM' }, alert), { ok: false, tokenInvalid: false, reason: 'QUOTA_EXCEEDED', retryAfterMs: 7_000 });
    const down = await provider().send({ token: 'down', service: 'FCM' }, alert);
    assert.ok(!down.ok && down.reason === 'UNAVAILABLE' && down.retryAfterMs! > 25_000 && down.retryAfterMs! <= 30_000, JSON.stringify(down));
    assert.equal(retryAfterMs('120'), 120_000);
    assert.equal(retryAfterMs('soon'), undefined);
    assert.equal(retryAfterMs(null), undefined);
  });

  it('paced against a quota of 10 a second: 35 pushes, 16 at a time, each delivered once, and the refusals stay few', async () => {
    const paced = new PacedPushProvider(provider(), { attempts: 8, baseDelayMs: 100, maxDelayMs: 5_000 });
    const tokens = Array.from({ length: 35 }, (_, i) => `quota-${i}`);
    // Starts at a second's beginning, so the quota's windows are whole.
    await new Promise((resolve) => setTimeout(resolve, 1000 - (Date.now() % 1000)));
    const started = Date.now();
    const inFlight = 16;
    const results: boolean[] = [];
    const queue = [...tokens];
    await Promise.all(
      Array.from({ length: inFlight }, async () => {
        for (let token = queue.shift(); token; token = queue.shift()) results.push((await paced.send({ token, service: 'FCM' }, alert)).ok);
      }),
    );
    assert.equal(results.filter(Boolean).length, tokens.length, 'every push delivered');
    assert.deepEqual([...fcmDelivered].sort(), [...tokens].sort(), 'each once');
    // 35 at 10 a second need four windows; the service was asked again only after the time it gave.
    assert.ok(Date.now() - started >= 3_000, `done in ${Date.now() - started} ms: faster than the quota allows`);
    // Without pacing each refused push is sent again at once and refused again, hundreds of times a
    // second; paced, a window sees at most the pushes already in flight when the gate closed.
    assert.ok(window.refused <= 3 * inFlight, `${window.refused} refusals`);
    assert.equal(paced.counts.throttled, window.refused);
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
