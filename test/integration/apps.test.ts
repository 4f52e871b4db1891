import assert from 'node:assert/strict';
import { createHash, createPublicKey, generateKeyPairSync, verify } from 'node:crypto';
import { parse as parseCsv } from 'csv-parse/sync';
import type { DeliveryDoc } from '../../src/apps/apps.repo.js';
import { after, before, describe, it } from 'node:test';
import { signIn, startTestApp, startTestWorkers, type Session, type TestApp } from '../helpers/app.js';

const ADMIN_PHONE = '+4915100000077';
import type { Workers } from '../../workers/main.js';
import { startAppServer, json, verifyAsAnApp, type AppServer } from '../helpers/app-server.js';
import { startDnsServer } from '../helpers/dns-server.js';
import { httpAs, makeRoom, makeUser } from '../helpers/factories.js';
import { until as waitFor } from '../helpers/wait.js';

/** The manifest hash as docs/apps/overview.md, defines it, computed here independently: keys sorted at every level, no whitespace. */
function sortedJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(sortedJson).join(',')}]`;
  if (value && typeof value === 'object') return `{${Object.keys(value).sort().map((k) => `${JSON.stringify(k)}:${sortedJson((value as Record<string, unknown>)[k])}`).join(',')}}`;
  return JSON.stringify(value);
}

describe('apps: the console, credentials, signed webhook calls and their failures', () => {
  let t: TestApp;
  let workers: Workers;
  let admin: Session;
  const servers: AppServer[] = [];
  const api = httpAs(() => t);
  before(async () => {
    t = await startTestApp({ WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_RETRY_SCHEDULE: '0.3,0.3', ADMIN_PHONES: ADMIN_PHONE });
    admin = await signIn(t, ADMIN_PHONE);
    workers = await startTestWorkers(t);
  });
  after(async () => {
    await workers.close();
    await Promise.all(servers.map((server) => server.close()));
    await t.close();
  });
  const server = async (respond: Parameters<typeof startAppServer>[0]) => {
    const started = await startAppServer(respond);
    servers.push(started);
    return started;
  };
  const createApp = async (owner: Session, webhookUrl: string) => {
    const res = await api(owner, 'POST', '/api/apps', { name: 'Pizza bot', webhookUrl });
    assert.equal(res.statusCode, 200, res.body);
    return res.json() as { id: string; webhookSecret: string };
  };
  const ping = async (owner: Session, appId: string) => {
    const res = await api(owner, 'POST', `/api/apps/${appId}/ping`);
    assert.equal(res.statusCode, 200, res.body);
    return res.json() as { outcome: string; status: number | null; failure: string | null; replyBytes: number; requestBytes: number; ms: number; deliveryId: string };
  };

  it('signs every call as the spec says, with both secrets for 24 hours after a rotation', async () => {
    const healthy = await server((_call, res) => json(res, { type: 'pong' }));
    const owner = await makeUser(t);
    const created = await createApp(owner, healthy.url);
    assert.match(created.webhookSecret, /^whsec_[A-Za-z0-9_-]{43}$/);
    const stored = await t.ctx.repos.apps.findApp(created.id);
    assert.ok(!JSON.stringify(stored).includes(created.webhookSecret.slice(6)), 'the secret is encrypted at rest');
    assert.ok(!JSON.stringify((await api(owner, 'GET', `/api/apps/${created.id}`)).json()).includes('whsec_'), 'shown once');

    const accepted = new Set<string>();
    const now = () => Math.floor(t.clock().getTime() / 1000);
    const first = await ping(owner, created.id);
    assert.deepEqual([first.outcome, first.status, first.failure], ['OK', 200, null]);
    const call = healthy.calls.at(-1)!;
    assert.deepEqual(
      [call.headers['content-type'], call.headers['user-agent'], call.headers['x-service-app'], call.headers['x-service-delivery'], call.headers.cookie],
      ['application/json; charset=utf-8', 'Service-Apps/1', created.id, first.deliveryId, undefined],
    );
    const body = JSON.parse(call.raw.toString());
    assert.deepEqual(Object.keys(body).sort(), ['ts', 'type']);
    assert.equal(body.type, 'ping');
    assert.ok(verifyAsAnApp(created.webhookSecret, call, now(), accepted));
    assert.equal(verifyAsAnApp(created.webhookSecret, call, now(), accepted), false, 'a delivery id is accepted once');
    assert.equal(verifyAsAnApp(created.webhookSecret, call, now() + 301, new Set()), false, 'older than 300 seconds');
    assert.equal(verifyAsAnApp(`${created.webhookSecret}x`, call, now(), new Set()), false);

    const rotated = (await api(owner, 'POST', `/api/apps/${created.id}/webhook-secret/rotate`)).json();
    assert.notEqual(rotated.webhookSecret, created.webhookSecret);
    await ping(owner, created.id);
    const during = healthy.calls.at(-1)!;
    assert.equal(String(during.headers['x-service-signature']).split(',').length, 2);
    assert.ok(verifyAsAnApp(rotated.webhookSecret, during, now(), new Set()), 'the new secret verifies');
    assert.ok(verifyAsAnApp(created.webhookSecret, during, now(), new Set()), 'and the old one, for 24 hours');
    t.clock.advance(24 * 3600 * 1000 + 1000);
    try {
      // A day on, the access token has expired: the console's call goes to the service directly.
      await t.ctx.services.apps.pingNow({ userId: owner.userId, deviceId: owner.deviceId }, created.id);
      const later = healthy.calls.at(-1)!;
      assert.equal(String(later.headers['x-service-signature']).split(',').length, 1);
      assert.ok(verifyAsAnApp(rotated.webhookSecret, later, now(), new Set()));
      assert.equal(verifyAsAnApp(created.webhookSecret, later, now(), new Set()), false, 'the old secret stopped after 24 hours');
    } finally {
      t.clock.advance(-(24 * 3600 * 1000 + 1000));
    }
  });

  it('classifies every failure kind and records each call on the activity list', async () => {
    const owner = await makeUser(t);
    const behaviours: [string, Parameters<typeof startAppServer>[0], [string, number | null, string | null]][] = [
      ['healthy', (_c, res) => json(res, { type: 'pong' }), ['OK', 200, null]],
      ['4xx', (_c, res) => json(res, { error: 'nope' }, 403), ['APP_ERROR', 403, 'CLIENT_ERROR']],
      ['500', (_c, res) => json(res, { error: 'boom' }, 500), ['FAILED', 500, 'SERVER_ERROR']],
      ['redirect', (_c, res) => res.writeHead(302, { location: 'http://127.0.0.1:9/elsewhere' }).end(), ['FAILED', 302, 'REDIRECT']],
      ['non-JSON', (_c, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('pong'), ['FAILED', 200, 'NOT_JSON']],
      ['JSON type, broken body', (_c, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"type":'), ['FAILED', 200, 'NOT_JSON']],
      ['40 KB reply', (_c, res) => json(res, { type: 'pong', padding: 'x'.repeat(40_000) }), ['FAILED', 200, 'TOO_LARGE']],
      ['contract broken', (_c, res) => json(res, { type: 'card' }), ['FAILED', 200, 'CONTRACT']],
      ['201', (_c, res) => json(res, { type: 'pong' }, 201), ['FAILED', 201, 'CONTRACT']],
      ['slow', (_c, res) => void setTimeout(() => json(res, { type: 'pong' }), 1600), ['FAILED', null, 'TIMEOUT']],
    ];
    for (const [name, respond, expected] of behaviours) {
      const app = await server(respond);
      const created = await createApp(owner, app.url);
      // A site administrator's grant sets the reply time (5 s by default); here 1 s, so the slow app times out quickly.
      assert.equal((await api(owner, 'PUT', `/api/admin/apps/${created.id}/reply-timeout`, { seconds: 1 })).json().code, 'UNAUTHORIZED');
      const granted = await api(admin, 'PUT', `/api/admin/apps/${created.id}/reply-timeout`, { seconds: 1 });
      assert.equal(granted.json().replyTimeoutSeconds, 1, granted.body);
      const result = await ping(owner, created.id);
      assert.deepEqual([result.outcome, result.status, result.failure], expected, name);
      if (name === '40 KB reply') assert.equal(result.replyBytes, 32_768, 'read up to 32768 bytes, then cut off');
      if (name === 'slow') assert.ok(result.ms >= 1000 && result.ms < 1500, `timed out at the grant (${result.ms} ms)`);
      if (name === 'redirect') assert.equal(app.calls.length, 1, 'the redirect is not followed');
      const activity = (await api(owner, 'GET', `/api/apps/${created.id}/activity`)).json();
      assert.equal(activity.totalItems, 1);
      assert.deepEqual([activity.items[0].outcome, activity.items[0].failure, activity.items[0].requestBytes > 0], [expected[0], expected[2], true]);
    }
    // Nobody listening: a connection failure.
    const gone = await server((_c, res) => json(res, {}));
    const created = await createApp(owner, gone.url);
    // The grant's bounds: at most 120 seconds.
    assert.equal((await api(admin, 'PUT', `/api/admin/apps/${created.id}/reply-timeout`, { seconds: 121 })).statusCode, 400);
    assert.equal((await api(admin, 'PUT', `/api/admin/apps/${created.id}/reply-timeout`, { seconds: 120 })).json().replyTimeoutSeconds, 120);
    await gone.close();
    assert.equal((await ping(owner, created.id)).failure, 'CONNECTION_FAILED');
    // Old activity rows go with the clean-up after 30 days.
    const removed = await t.ctx.services.maintenance.cleanupExpired(new Date(Date.now() + 31 * 24 * 3600 * 1000));
    assert.ok(removed.appActivity >= behaviours.length + 1);
    assert.ok(removed.appDeliveries >= 0 && removed.appForms >= 0);
    assert.equal((await api(owner, 'GET', `/api/apps/${created.id}/activity`)).json().totalItems, 0);
  });

  it('opens the breaker at the fifth failure in 60 s, calls nothing for 60 s, then lets the first call decide', async () => {
    let failing = true;
    const flapping = await server((_c, res) => (failing ? json(res, { error: 'down' }, 503) : json(res, { type: 'pong' })));
    const owner = await makeUser(t);
    const { id } = await createApp(owner, flapping.url);
    const principal = { userId: owner.userId, deviceId: owner.deviceId };
    const { apps } = t.ctx.services;
    const failures = [];
    for (let i = 0; i < 5; i++) failures.push((await apps.pingNow(principal, id)).failure);
    assert.deepEqual(failures, Array(5).fill('SERVER_ERROR'));
    const notSent = await apps.pingNow(principal, id);
    assert.equal(notSent.failure, 'BREAKER_OPEN');
    assert.equal(flapping.calls.length, 5, 'not called while open');
    // The row says nothing was sent, why, and when a call goes through again; no request is shown.
    assert.match(String(notSent.detail), /^Not sent: the breaker opened after 5 failures within 60 s; the first call after \d{4}-\d\d-\d\dT[\d:.]+Z goes through and decides/);
    assert.deepEqual([notSent.requestBytes, notSent.request ?? null], [0, null]);
    const overview = await apps.overview(principal, id);
    assert.equal(overview.breakerOpen, true);
    assert.ok(overview.breakerOpenUntil && new Date(overview.breakerOpenUntil).getTime() > t.clock().getTime(), 'the console says until when');
    // A 4xx is the app's error, not a failure: it would not have opened the breaker (checked below).
    t.clock.advance(59_000);
    try {
      assert.equal((await apps.pingNow(principal, id)).failure, 'BREAKER_OPEN', 'still open at 59 s');
      t.clock.advance(1_000);
      // The first call after 60 s goes through and fails: open again for another 60 s.
      assert.equal((await apps.pingNow(principal, id)).failure, 'SERVER_ERROR');
      assert.equal((await apps.pingNow(principal, id)).failure, 'BREAKER_OPEN');
      assert.equal(flapping.calls.length, 6);
      t.clock.advance(60_000);
      failing = false;
      assert.equal((await apps.pingNow(principal, id)).outcome, 'OK', 'the probe succeeds: closed');
      assert.equal((await apps.pingNow(principal, id)).outcome, 'OK');
      assert.equal(flapping.calls.length, 8);
    } finally {
      t.clock.advance(-120_000);
    }

    // The owner closes an open breaker from the console: the next call goes through at once.
    failing = true;
    for (let i = 0; i < 5; i++) await apps.pingNow(principal, id);
    assert.equal((await apps.pingNow(principal, id)).failure, 'BREAKER_OPEN');
    const stranger = await makeUser(t);
    assert.equal((await api(stranger, 'POST', `/api/apps/${id}/breaker/close`)).json().code, 'APP_NOT_FOUND', 'only the owner');
    assert.equal((await api(owner, 'POST', `/api/apps/${id}/breaker/close`)).statusCode, 204);
    failing = false;
    assert.equal((await apps.pingNow(principal, id)).outcome, 'OK', 'called at once after the owner closed it');

    const refusing = await server((_c, res) => json(res, { error: 'no' }, 400));
    const other = await createApp(owner, refusing.url);
    for (let i = 0; i < 6; i++) assert.equal((await apps.pingNow(principal, other.id)).failure, 'CLIENT_ERROR');
    assert.equal(refusing.calls.length, 6, '4xx answers never open the breaker');
  });

  it('refuses the ninth concurrent call at once while eight hang', async () => {
    const waiting: (() => void)[] = [];
    let hold = true;
    const hanging = await server((_c, res) => (hold ? new Promise<void>((resolve) => waiting.push(() => resolve(json(res, { type: 'pong' })))) : json(res, { type: 'pong' })));
    const owner = await makeUser(t);
    const { id } = await createApp(owner, hanging.url);
    const principal = { userId: owner.userId, deviceId: owner.deviceId };
    const { apps } = t.ctx.services;
    const eight = Array.from({ length: 8 }, () => apps.pingNow(principal, id));
    while (hanging.calls.length < 8) await new Promise((resolve) => setTimeout(resolve, 10));
    const started = Date.now();
    const ninth = await apps.pingNow(principal, id);
    assert.deepEqual([ninth.outcome, ninth.failure], ['FAILED', 'TOO_MANY_CONCURRENT']);
    assert.ok(Date.now() - started < 500, 'refused at once, not queued');
    assert.equal(hanging.calls.length, 8);
    hold = false;
    for (const release of waiting) release();
    assert.deepEqual(new Set((await Promise.all(eight)).map((r) => r.outcome)), new Set(['OK']));
    assert.equal((await apps.pingNow(principal, id)).outcome, 'OK', 'room again once they ended');
  });

  it('pings the apps of a round at once, a bounded number at a time (issue 24, item 7)', async () => {
    let inFlight = 0;
    let most = 0;
    const slow = await server(async (_c, res) => {
      most = Math.max(most, ++inFlight);
      await new Promise((resolve) => setTimeout(resolve, 200));
      inFlight--;
      json(res, { type: 'pong' });
    });
    const owner = await makeUser(t);
    const webhooks = t.ctx.services.appWebhooks;
    for (let i = 0; i < 20; i++) {
      const { id } = await createApp(owner, slow.url);
      await webhooks.call((await t.ctx.repos.apps.findApp(id))!, 'invocation', { type: 'invocation', id: `x${i}`, ts: 0 });
    }
    most = 0;
    const before = slow.calls.length;
    await webhooks.pingRecentlyUsed();
    assert.equal(slow.calls.length - before, 20, 'every used app pinged');
    assert.ok(most > 1 && most <= 16, `${most} pings in flight at most`);
  });

  it('pings apps used in the last 24 hours: two failed checks in a row mark one DOWN until a pong', async () => {
    let answering = true;
    const app = await server((_c, res) => (answering ? json(res, { type: 'pong' }) : json(res, { error: 'down' }, 500)));
    const owner = await makeUser(t);
    const { id } = await createApp(owner, app.url);
    const webhooks = t.ctx.services.appWebhooks;
    const health = async () => (await api(owner, 'GET', `/api/apps/${id}`)).json().health;
    await webhooks.pingRecentlyUsed();
    assert.equal(app.calls.length, 0, 'an app nobody used is not pinged');
    // A member's call (any call that is not a health check) makes the app "used".
    const stored = (await t.ctx.repos.apps.findApp(id))!;
    await webhooks.call(stored, 'invocation', { type: 'invocation', id: 'x', ts: 0 });
    await webhooks.pingRecentlyUsed();
    assert.equal(await health(), 'UP');
    answering = false;
    await webhooks.pingRecentlyUsed();
    assert.equal(await health(), 'UP', 'one failed check is not enough');
    await webhooks.pingRecentlyUsed();
    assert.equal(await health(), 'DOWN');
    answering = true;
    await webhooks.pingRecentlyUsed();
    assert.equal(await health(), 'UP', 'a pong brings it back');
    assert.equal(app.calls.filter((c) => JSON.parse(c.raw.toString()).type === 'ping').length, 4);
    // A day after its last use it is no longer pinged.
    t.clock.advance(24 * 3600 * 1000 + 1000);
    try {
      const before = app.calls.length;
      await webhooks.pingRecentlyUsed();
      assert.equal(app.calls.length, before);
    } finally {
      t.clock.advance(-(24 * 3600 * 1000 + 1000));
    }
  });

  it('downloads the activity list as CSV that a CSV library reads back', async () => {
    const quoting = await server((_c, res) => json(res, { type: 'pong' }));
    const owner = await makeUser(t);
    const { id } = await createApp(owner, quoting.url);
    for (let i = 0; i < 3; i++) await api(owner, 'POST', `/api/apps/${id}/ping`);
    // An event name with a comma, a quote and a line break, to check the quoting.
    const stored = (await t.ctx.repos.apps.findApp(id))!;
    await t.ctx.services.appWebhooks.call(stored, 'odd, "event"\nname', { type: 'odd' });
    const res = await api(owner, 'GET', `/api/apps/${id}/activity.csv`);
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers['content-type']), /^text\/csv/);
    const rows = parseCsv(res.body, { columns: true }) as Record<string, string>[];
    const listed = (await api(owner, 'GET', `/api/apps/${id}/activity`)).json().items as { id: string; event: string; outcome: string; ms: number }[];
    assert.equal(rows.length, 4);
    assert.deepEqual(rows.map((r) => [r.id, r.event, r.outcome, Number(r.ms)]), listed.map((a) => [a.id, a.event, a.outcome, a.ms]));
    assert.equal(rows[0]!.event, 'odd, "event"\nname');
    // Every field of the JSON row has its column (what broke included: failure, detail, the app's error code).
    assert.deepEqual(Object.keys(rows[0]!).sort(), Object.keys(listed[0]!).sort());
    assert.equal((await api(await makeUser(t), 'GET', `/api/apps/${id}/activity.csv`)).json().code, 'APP_NOT_FOUND');
  });

  it('installs: per-app ids stable until forgotten, unlinkable, a tester id apart, manifest versions kept', async () => {
    const [owner, member] = await Promise.all([makeUser(t), makeUser(t)]);
    const first = await createApp(owner, 'http://127.0.0.1:9/webhook');
    const second = await createApp(owner, 'http://127.0.0.1:9/webhook');
    const manifest = (version: string) => ({ version, scopes: [], commands: [{ id: 'menu', title: 'Menu' }], flows: [] });
    assert.equal((await api(member, 'POST', `/api/apps/${first.id}/install`)).json().code, 'APP_NOT_FOUND', 'not public yet');
    assert.equal((await api(owner, 'POST', `/api/apps/${first.id}/install`)).json().code, 'APP_HAS_NO_MANIFEST');
    for (const app of [first, second]) {
      assert.equal((await api(owner, 'PUT', `/api/apps/${app.id}/manifest`, manifest('1.0.0'))).statusCode, 200);
      assert.equal((await api(owner, 'PATCH', `/api/apps/${app.id}`, { public: true, name: `Pizza ${app === first ? 'Express' : 'Planet'}` })).statusCode, 200);
    }
    const found = (await api(member, 'GET', '/api/apps/directory?q=express')).json();
    assert.deepEqual(found.items.map((a: { id: string }) => a.id), [first.id]);

    // The owner, testing before installing, is a tester with an id of their own.
    const storedFirst = (await t.ctx.repos.apps.findApp(first.id))!;
    const { appInstalls } = t.ctx.services;
    const tester = await appInstalls.caller(storedFirst, owner.userId);
    assert.equal(tester?.tester, true);
    const ownerInstall = (await api(owner, 'POST', `/api/apps/${first.id}/install`)).json();
    assert.notEqual(ownerInstall.appUserId, tester?.appUserId, 'a tester has another id before installing than after');

    const install = (await api(member, 'POST', `/api/apps/${first.id}/install`)).json();
    assert.match(install.appUserId, /^u_[A-Za-z0-9_-]{22}$/);
    assert.ok(!install.appUserId.includes(member.userId));
    const other = (await api(member, 'POST', `/api/apps/${second.id}/install`)).json();
    assert.notEqual(other.appUserId, install.appUserId, 'each app its own id');
    assert.equal((await api(member, 'DELETE', `/api/apps/${first.id}/install`)).statusCode, 204);
    assert.equal((await api(member, 'POST', `/api/apps/${first.id}/install`)).json().appUserId, install.appUserId, 'the same after removing and installing again');
    assert.equal((await api(member, 'DELETE', `/api/apps/${first.id}/install?forget=true`)).statusCode, 204);
    const fresh = (await api(member, 'POST', `/api/apps/${first.id}/install`)).json();
    assert.notEqual(fresh.appUserId, install.appUserId, 'a new id only after forget');

    // A new manifest version: the member stays on 1.0.0 until they install again.
    assert.equal((await api(owner, 'PUT', `/api/apps/${first.id}/manifest`, manifest('1.1.0'))).statusCode, 200);
    const mine = (await api(member, 'GET', '/api/apps/installed')).json().find((i: { appId: string }) => i.appId === first.id);
    assert.deepEqual([mine.manifestVersion, mine.currentVersion], ['1.0.0', '1.1.0']);
    assert.equal((await appInstalls.caller(storedFirst, member.userId))?.manifestVersion, '1.0.0');
    assert.equal((await api(member, 'POST', `/api/apps/${first.id}/install`)).json().manifestVersion, '1.1.0');
  });

  it('a payment event\'s reply that is not shown to the payer is logged as refused, with why (issue 24, item 6)', async () => {
    const app = await server((_c, res) => json(res, { type: 'view', view: { id: 'v', title: 'V', blocks: [] } }));
    const owner = await makeUser(t);
    const created = await createApp(owner, app.url);
    const event = { type: 'payment.completed', id: 'evt-2', ts: 1, app: { id: created.id }, payment: { id: 'pay-2', kind: 'charge', status: 'completed', amount: '1', currency: 'USDT' }, user: { id: 'u_y' } };
    await t.ctx.services.appWebhooks.sendNow(created.id, 'payment.completed', event, { retry: true });
    const [row] = (await api(owner, 'GET', `/api/apps/${created.id}/activity`)).json().items as { outcome: string; detail: string | null }[];
    assert.equal(row!.outcome, 'OK', 'delivered: the event needs no more tries');
    assert.equal(row!.detail, 'refused, not shown: a view reply is not shown for a payment event');
  });

  it('retries payment events on the schedule with the same delivery id, honours Retry-After, gives up, and replays', async () => {
    const plan = [500, 503, 204];
    const app = await server((_c, res) => {
      const status = plan.shift() ?? 204;
      if (status === 503) res.writeHead(503, { 'retry-after': '1' }).end();
      else if (status === 204) res.writeHead(204).end();
      else json(res, { error: 'later' }, status);
    });
    const owner = await makeUser(t);
    const created = await createApp(owner, app.url);
    const webhooks = t.ctx.services.appWebhooks;
    const deliveries = t.db.collection<DeliveryDoc>('app_deliveries');
    const until = async (id: string, status: string) => {
      const deadline = Date.now() + 10_000;
      while ((await deliveries.findOne({ _id: id }))?.status !== status && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
      return deliveries.findOne({ _id: id });
    };
    const event = { type: 'payment.completed', id: 'evt-1', ts: 1, app: { id: created.id }, payment: { id: 'pay-1', kind: 'charge', status: 'completed', amount: '4.50', currency: 'USDT' }, user: { id: 'u_x' } };
    const deliveryId = await webhooks.enqueue(created.id, 'payment.completed', event, { retry: true });
    assert.equal((await until(deliveryId, 'DELIVERED'))?.attempts, 3);
    assert.deepEqual(app.calls.map((c) => c.headers['x-service-delivery']), [deliveryId, deliveryId, deliveryId], 'every attempt carries the same delivery id');
    assert.ok(app.calls[1]!.at - app.calls[0]!.at >= 250, 'the schedule\'s step');
    assert.ok(app.calls[2]!.at - app.calls[1]!.at >= 990, 'the app\'s Retry-After (1 s) instead');
    assert.deepEqual(new Set(app.calls.map((c) => c.raw.toString())).size, 1, 'the same body each time');
    const activity = (await api(owner, 'GET', `/api/apps/${created.id}/activity`)).json().items as { id: string; deliveryId: string; outcome: string; failure: string | null }[];
    assert.deepEqual(activity.map((a) => [a.deliveryId, a.outcome]).reverse(), [[deliveryId, 'FAILED'], [deliveryId, 'FAILED'], [deliveryId, 'OK']]);

    // Replayed from the activity list: the same delivery id again.
    assert.equal((await api(owner, 'POST', `/api/apps/${created.id}/activity/${activity[0]!.id}/replay`)).statusCode, 202);
    await until(deliveryId, 'DELIVERED');
    const deadline = Date.now() + 5_000;
    while (app.calls.length < 4 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(app.calls[3]?.headers['x-service-delivery'], deliveryId);
    const pinged = await ping(owner, created.id);
    const pingRow = (await api(owner, 'GET', `/api/apps/${created.id}/activity`)).json().items.find((a: { deliveryId: string }) => a.deliveryId === pinged.deliveryId);
    assert.equal((await api(owner, 'POST', `/api/apps/${created.id}/activity/${pingRow.id}/replay`)).json().code, 'NOT_REPLAYABLE');

    // An app that never answers: one attempt per step, then the delivery gives up.
    const down = await server((_c, res) => json(res, { error: 'down' }, 500));
    const other = await createApp(owner, down.url);
    const lost = await webhooks.enqueue(other.id, 'payment.declined', { ...event, type: 'payment.declined' }, { retry: true });
    assert.equal((await until(lost, 'GAVE_UP'))?.attempts, 3);
    assert.equal(down.calls.length, 3);
    // An invocation through the queue is tried once.
    const once = await webhooks.enqueue(other.id, 'invocation', { type: 'invocation', id: 'i-1', ts: 1 }, { retry: false });
    assert.equal((await until(once, 'FAILED'))?.attempts, 1);
  });

  it('publishes its signing key as a JWKS that checks what it signs for apps', async () => {
    const res = await t.app.inject({ url: '/.well-known/jwks.json' });
    assert.equal(res.statusCode, 200);
    const { keys } = res.json() as { keys: { kid: string; kty: string; crv: string; x: string; alg: string }[] };
    assert.deepEqual([keys.length, keys[0]!.kty, keys[0]!.crv, keys[0]!.alg], [1, 'OKP', 'Ed25519', 'EdDSA']);
    const token = t.ctx.services.appSigner.sign({ iss: 'chat-platform', aud: 'app-1', sub: 'u_test' });
    const [header, payload, signature] = token.split('.') as [string, string, string];
    const kid = JSON.parse(Buffer.from(header, 'base64url').toString()).kid;
    const key = createPublicKey({ key: keys.find((k) => k.kid === kid)!, format: 'jwk' });
    assert.ok(verify(null, Buffer.from(`${header}.${payload}`), key, Buffer.from(signature, 'base64url')), 'an app checks it with the published key');
    assert.equal(verify(null, Buffer.from(`${header}.${payload}x`), key, Buffer.from(signature, 'base64url')), false);
  });

  it('checks manifests against their own declarations and hashes them as uploaded', async () => {
    const owner = await makeUser(t);
    const { id } = await createApp(owner, 'http://127.0.0.1:9/webhook');
    const sealingKey = generateKeyPairSync('x25519').publicKey.export({ format: 'der', type: 'spki' }).subarray(-32).toString('base64');
    const manifest = {
      version: '1.0.0',
      scopes: ['payments', 'conversation.ref'],
      commands: [{ id: 'order', title: 'Order a pizza', flow: 'order-form' }, { id: 'menu', title: 'Show the menu' }],
      flows: [
        {
          id: 'order-form',
          mode: 'dynamic',
          views: [
            { id: 'size', title: 'Size', inputs: [{ id: 'size', type: 'select', label: 'Size', required: true, rules: { options: [{ value: 's', label: 'Small' }, { value: 'l', label: 'Large' }] } }] },
            { id: 'address', title: 'Address', inputs: [{ id: 'street', type: 'text', label: 'Street', rules: { minLength: 3, maxLength: 80 } }, { id: 'when', type: 'date', label: 'When' }] },
          ],
        },
      ],
      sealing: { publicKey: sealingKey },
    };
    const res = await api(owner, 'PUT', `/api/apps/${id}/manifest`, manifest);
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json(), { version: '1.0.0', manifestHash: createHash('sha256').update(sortedJson(manifest)).digest('hex') });
    assert.equal((await api(owner, 'PUT', `/api/apps/${id}/manifest`, manifest)).statusCode, 200, 'the same version again, unchanged, is fine');
    assert.equal((await api(owner, 'PUT', `/api/apps/${id}/manifest`, { ...manifest, commands: manifest.commands.slice(1) })).json().code, 'MANIFEST_VERSION_EXISTS');

    const broken: [object, string, string][] = [
      [{ commands: [{ id: 'order', title: 'Order', flow: 'missing' }] }, 'MANIFEST_INVALID', 'commands.0.flow'],
      [{ commands: [{ id: 'menu', title: 'A' }, { id: 'menu', title: 'B' }] }, 'MANIFEST_INVALID', 'commands.1.id'],
      [{ flows: [{ ...manifest.flows[0], views: [{ id: 'v', title: 'V', inputs: [{ id: 'a', type: 'select', label: 'A' }] }] }] }, 'MANIFEST_INVALID', 'flows.0.views.0.inputs.0.rules.options'],
      [{ sealing: { publicKey: 'AAAA' } }, 'MANIFEST_INVALID', 'sealing.publicKey'],
      [{ templates: [{ id: 't', card: { blocks: [{ type: 'title', text: '' }] } }] }, 'MANIFEST_INVALID', 'templates.0.card.blocks.0.text'],
      [{ flows: [{ ...manifest.flows[0], views: [{ id: 'v', title: 'V', inputs: [{ id: 'a', type: 'colour', label: 'A' }] }] }] }, 'VALIDATION_FAILED', 'flows.0.views.0.inputs.0.type'],
      [{ scopes: ['payments', 'user.password'] }, 'VALIDATION_FAILED', 'scopes.1'],
      [{ commands: [] }, 'VALIDATION_FAILED', 'commands'],
      [{ commands: [{ id: 'w', title: 'W', options: [{ id: 'u', type: 'select', label: 'U' }] }] }, 'MANIFEST_INVALID', 'commands.0.options.0.rules.options'],
      [{ commands: [{ id: 'w', title: 'W', flow: manifest.flows[0]!.id, argument: { label: 'city' } }] }, 'MANIFEST_INVALID', 'commands.0'],
      [{ commands: [{ id: 'w', title: 'W', argument: { label: 'city', maxLength: 2001 } }] }, 'VALIDATION_FAILED', 'commands.0.argument.maxLength'],
    ];
    for (const [change, code, path] of broken) {
      const answer = await api(owner, 'PUT', `/api/apps/${id}/manifest`, { ...manifest, version: '2.0.0', ...change });
      assert.deepEqual([answer.statusCode, answer.json().code], [400, code], answer.body);
      assert.ok(JSON.stringify(answer.json().details).includes(path), `${path} named: ${answer.body}`);
    }
    const current = (await api(owner, 'GET', `/api/apps/${id}`)).json();
    assert.equal(current.manifestVersion, '1.0.0', 'a refused manifest changes nothing');
    // A newer version, then back to the earlier one (a rollback), which keeps its hash.
    assert.equal((await api(owner, 'PUT', `/api/apps/${id}/manifest`, { ...manifest, version: '1.1.0' })).statusCode, 200);
    assert.equal((await api(owner, 'GET', `/api/apps/${id}`)).json().manifestVersion, '1.1.0');
    const back = await api(owner, 'POST', `/api/apps/${id}/manifest/versions/1.0.0/current`);
    assert.deepEqual([back.statusCode, back.json().version, back.json().manifestHash], [200, '1.0.0', res.json().manifestHash], back.body);
    assert.equal((await api(owner, 'GET', `/api/apps/${id}`)).json().manifestVersion, '1.0.0');
    assert.equal((await api(owner, 'POST', `/api/apps/${id}/manifest/versions/9.9.9/current`)).json().code, 'APP_NOT_FOUND');
  });

  it('tells the app when a room admin adds it to a room or removes it, signed and retried as events are', async () => {
    const [owner, admin] = await Promise.all([makeUser(t), makeUser(t)]);
    let failFirst = true;
    const app = await server((_c, res) => {
      // The first event's first attempt fails: the service tries it again, the same event.
      if (failFirst) {
        failFirst = false;
        res.writeHead(503).end();
      } else res.writeHead(204).end();
    });
    const { id, webhookSecret } = await createApp(owner, app.url);
    assert.equal((await api(owner, 'PATCH', `/api/apps/${id}`, { public: true })).statusCode, 200);
    const room = await makeRoom(t, admin);
    assert.equal((await api(admin, 'POST', `/api/rooms/${room.id}/apps/${id}`)).statusCode, 204);
    assert.equal((await api(admin, 'POST', `/api/rooms/${room.id}/apps/${id}`)).statusCode, 204, 'added again: nothing new to tell');
    assert.equal((await api(admin, 'DELETE', `/api/rooms/${room.id}/apps/${id}`)).statusCode, 204);
    const events = () => app.calls.map((call) => JSON.parse(call.raw.toString('utf8')) as { type: string; id: string; app: { id: string }; room: { id: string; type: string } });
    await waitFor(() => events().filter((event) => event.type === 'app.removed').length === 1 && events().filter((event) => event.type === 'app.added').length === 2, 'the added event twice (a retry) and the removed event once', 15_000);
    const [added, retried, removed] = [...events().filter((event) => event.type === 'app.added'), ...events().filter((event) => event.type === 'app.removed')];
    assert.deepEqual([added!.app.id, added!.room], [id, { id: room.id, type: 'PRIVATE_GROUP' }]);
    assert.equal(retried!.id, added!.id, 'a retry carries the same event id');
    assert.deepEqual([removed!.room.id, removed!.id === added!.id], [room.id, false]);
    const now = Math.floor(Date.now() / 1000);
    for (const call of app.calls) assert.ok(verifyAsAnApp(webhookSecret, call, now, new Set()), 'signed with the app\'s secret');
  });

  it('a new webhook URL over REST is saved only once it answers a signed ping, as in the console', async () => {
    const owner = await makeUser(t);
    const first = await server((_c, res) => json(res, { type: 'pong' }));
    const second = await server((_c, res) => json(res, { type: 'pong' }));
    const { id } = await createApp(owner, first.url);
    const refused = await api(owner, 'PATCH', `/api/apps/${id}`, { webhookUrl: 'http://127.0.0.1:9/webhook', name: 'Renamed' });
    assert.deepEqual([refused.statusCode, refused.json().code], [400, 'WEBHOOK_URL_NOT_ANSWERING'], refused.body);
    assert.match(refused.json().message, /did not answer a signed ping .*CONNECTION_FAILED.*: the app keeps http:\/\/127\.0\.0\.1/);
    const unchanged = (await api(owner, 'GET', `/api/apps/${id}`)).json();
    assert.deepEqual([unchanged.webhookUrl, unchanged.name === 'Renamed'], [first.url, false], 'nothing changed');
    const saved = await api(owner, 'PATCH', `/api/apps/${id}`, { webhookUrl: second.url });
    assert.deepEqual([saved.statusCode, saved.json().webhookUrl], [200, second.url]);
    assert.equal(second.calls.length, 1, 'pinged once before saving');
    // The same URL again: nothing to check, nothing sent.
    assert.equal((await api(owner, 'PATCH', `/api/apps/${id}`, { webhookUrl: second.url, name: 'Renamed' })).statusCode, 200);
    assert.equal(second.calls.length, 1);
  });

  it('bot tokens and payments keys: shown once, stored as hashes, listed by prefix, refused after revocation', async () => {
    const [owner, admin, member] = await Promise.all([makeUser(t), makeUser(t), makeUser(t)]);
    const { id } = await createApp(owner, 'http://127.0.0.1:9/webhook');
    const room = await makeRoom(t, admin, { members: [member] });
    assert.equal((await api(owner, 'POST', `/api/apps/${id}/bot-tokens`, { roomId: room.id })).json().code, 'APP_NOT_IN_ROOM');
    assert.equal((await api(member, 'POST', `/api/rooms/${room.id}/apps/${id}`)).json().code, 'ROOM_NOT_ALLOWED');
    // A direct chat's creator is told a direct chat takes no apps, not that they are not its creator.
    const direct = await makeRoom(t, admin, { type: 'DIRECT', members: [member] });
    const inDirect = (await api(admin, 'POST', `/api/rooms/${direct.id}/apps/${id}`)).json();
    assert.deepEqual([inDirect.code, inDirect.message], ['ROOM_NOT_ALLOWED', 'A direct chat cannot be managed: members, admins and apps are added to groups and broadcast rooms']);
    // Another member's app goes into a room once it is listed in the directory (issue 32).
    assert.equal((await api(admin, 'POST', `/api/rooms/${room.id}/apps/${id}`)).json().code, 'APP_NOT_FOUND');
    assert.equal((await api(owner, 'PATCH', `/api/apps/${id}`, { public: true })).statusCode, 200);
    assert.equal((await api(admin, 'POST', `/api/rooms/${room.id}/apps/${id}`)).statusCode, 204);

    const bot = (await api(owner, 'POST', `/api/apps/${id}/bot-tokens`, { roomId: room.id })).json();
    const key = (await api(owner, 'POST', `/api/apps/${id}/payment-keys`)).json();
    assert.match(bot.token, /^bbt_[A-Za-z0-9_-]{12}_[A-Za-z0-9_-]{43}$/);
    assert.match(key.token, /^bpk_[A-Za-z0-9_-]{12}_[A-Za-z0-9_-]{43}$/);
    const listed = (await api(owner, 'GET', `/api/apps/${id}/credentials`)).json();
    assert.deepEqual(listed.map((c: { prefix: string }) => c.prefix).sort(), [bot.prefix, key.prefix].sort());
    assert.ok(!JSON.stringify(listed).includes(bot.token) && !JSON.stringify(await t.db.collection('app_credentials').find().toArray()).includes(bot.token.slice(17)), 'only hashes are kept');

    const { apps } = t.ctx.services;
    assert.equal((await apps.verifyCredential(bot.token, 'BOT_TOKEN'))?.roomId, room.id);
    assert.equal(await apps.verifyCredential(bot.token, 'PAYMENT_KEY'), null);
    assert.equal(await apps.verifyCredential(`${bot.token.slice(0, -1)}${bot.token.endsWith('A') ? 'B' : 'A'}`, 'BOT_TOKEN'), null);
    assert.ok(await apps.verifyCredential(key.token, 'PAYMENT_KEY'));
    assert.equal((await api(owner, 'DELETE', `/api/apps/${id}/credentials/${key.id}`)).statusCode, 204);
    assert.equal(await apps.verifyCredential(key.token, 'PAYMENT_KEY'), null, 'refused after revocation');
    assert.equal((await api(owner, 'DELETE', `/api/apps/${id}/credentials/${key.id}`)).json().code, 'CREDENTIAL_NOT_FOUND');
    // Removing the app from the room ends its bot tokens there.
    assert.equal((await api(admin, 'DELETE', `/api/rooms/${room.id}/apps/${id}`)).statusCode, 204);
    assert.equal(await apps.verifyCredential(bot.token, 'BOT_TOKEN'), null);
    // Another member's app is the same 400 as none.
    assert.equal((await api(member, 'GET', `/api/apps/${id}/credentials`)).json().code, 'APP_NOT_FOUND');
  });
});

describe('apps: webhooks never reach private addresses (WEBHOOK_ALLOW_PRIVATE off)', () => {
  let t: TestApp;
  let listening: AppServer;
  let dns: Awaited<ReturnType<typeof startDnsServer>>;
  const api = httpAs(() => t);
  before(async () => {
    dns = await startDnsServer({ 'metadata.attacker.test': '169.254.169.254', 'intranet.attacker.test': '10.0.0.5', 'loopback.attacker.test': '127.0.0.1' });
    t = await startTestApp({ WEBHOOK_DNS_SERVER: dns.address });
    listening = await startAppServer((_c, res) => json(res, { type: 'pong' }));
  });
  after(async () => {
    await listening.close();
    await dns.close();
    await t.close();
  });

  it('refuses private, loopback and link-local targets, also behind a name that resolves to one', async () => {
    const owner = await makeUser(t);
    for (const url of ['http://example.com/hook', `https://127.0.0.1:${listening.port}/`, 'https://169.254.169.254/latest/meta-data', 'https://10.1.2.3/', 'https://[::1]/', 'https://[::ffff:127.0.0.1]/', 'https://localhost/', 'not a url']) {
      const res = await api(owner, 'POST', '/api/apps', { name: 'x', webhookUrl: url });
      assert.deepEqual([res.statusCode, res.json().code], [400, 'WEBHOOK_URL_INVALID'], url);
    }
    // Each refusal names the rule.
    const said = async (url: string) => (await api(owner, 'POST', '/api/apps', { name: 'x', webhookUrl: url })).json().message as string;
    assert.equal(await said('not a url'), 'The webhook URL is not a URL: it must be an absolute https:// URL to a public address, such as https://app.example.com/webhook');
    assert.equal(await said('http://example.com/hook'), 'The webhook URL must be an absolute https:// URL to a public address: http is not allowed');
    assert.equal(await said('https://10.1.2.3/'), 'The webhook URL must be a public address: loopback, private and link-local addresses are refused');
    // Names whose DNS answers are a metadata or private address (from this test's DNS server): accepted as
    // URLs, refused on the answer, never dialled.
    for (const name of ['metadata.attacker.test', 'intranet.attacker.test', `loopback.attacker.test:${listening.port}`]) {
      const created = (await api(owner, 'POST', '/api/apps', { name: 'x', webhookUrl: `https://${name}/latest/meta-data` })).json();
      const result = (await api(owner, 'POST', `/api/apps/${created.id}/ping`)).json();
      assert.deepEqual([result.outcome, result.failure], ['FAILED', 'ADDRESS_REFUSED'], name);
    }
    assert.equal(listening.calls.length, 0, 'the app server behind 127.0.0.1 was never reached');
    // A name the DNS server does not know: it fails to connect, which is not the same refusal.
    const unknown = (await api(owner, 'POST', '/api/apps', { name: 'x', webhookUrl: 'https://nowhere.attacker.test/' })).json();
    assert.equal((await api(owner, 'POST', `/api/apps/${unknown.id}/ping`)).json().failure, 'CONNECTION_FAILED');
  });
});
