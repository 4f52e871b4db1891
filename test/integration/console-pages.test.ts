import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { addressOf, freshPhone, lastCode, signIn, startTestApp, startTestWorkers, type TestApp } from '../helpers/app.js';
import type { Workers } from '../../workers/main.js';
import { until } from '../helpers/wait.js';
import { httpAs } from '../helpers/factories.js';
import { totp } from '../helpers/totp.js';
import { json, startAppServer, type AppServer } from '../helpers/app-server.js';

/** The console's pages at their edges, over HTTP without a browser (the browser walk is test/browser/console.test.ts). */
const ADMIN_PHONE = '+4915100000778';

describe('console pages: sign-in, refusals and what they leave unchanged', () => {
  let t: TestApp;
  let appServer: AppServer;
  let workers: Workers;
  before(async () => {
    t = await startTestApp({ WEBHOOK_ALLOW_PRIVATE: 'true', ADMIN_PHONES: ADMIN_PHONE, WEBHOOK_RETRY_SCHEDULE: '0.2,0.2' });
    appServer = await startAppServer((_call, res) => json(res, { type: 'pong' }));
    workers = await startTestWorkers(t);
  });
  after(async () => {
    await workers.close();
    await appServer.close();
    await t.close();
  });

  const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();
  const post = (url: string, fields: Record<string, string>, headers: Record<string, string> = {}, remoteAddress?: string) =>
    t.app.inject({ method: 'POST', url, payload: form(fields), headers: { 'content-type': 'application/x-www-form-urlencoded', host: 'localhost', ...headers }, ...(remoteAddress ? { remoteAddress } : {}) });
  const api = httpAs(() => t);
  const get = (url: string, cookie?: string) => t.app.inject({ url, headers: { host: 'localhost', ...(cookie ? { cookie } : {}) } });

  /** Signs in through the forms: the cookie and the session's form token. */
  async function signInByForms(phone = freshPhone()): Promise<{ cookie: string; csrf: string; phone: string }> {
    const address = addressOf(phone);
    assert.equal((await post('/console/sign-in', { phone }, {}, address)).statusCode, 200);
    const wrong = await post('/console/sign-in/code', { phone, code: '000000' }, {}, address);
    assert.equal(wrong.statusCode, 400);
    assert.match(wrong.body, /Type the code again, or ask for a new one/);
    assert.equal(wrong.headers['set-cookie'], undefined, 'no session for a wrong code');
    const signedIn = await post('/console/sign-in/code', { phone, code: await lastCode(t.outbox, phone) }, {}, address);
    assert.equal(signedIn.statusCode, 303);
    const cookie = String(signedIn.headers['set-cookie']).split(';')[0]!;
    const page = await get('/console', cookie);
    const csrf = /name="_csrf" value="([^"]+)"/.exec(page.body)![1]!;
    return { cookie, csrf, phone };
  }

  it('sends a visitor to sign in, and answers a malformed number with what to do', async () => {
    const visitor = await get('/console/apps/some-app');
    assert.deepEqual([visitor.statusCode, visitor.headers.location], [303, '/console/sign-in']);
    const bad = await post('/console/sign-in', { phone: '12' }, {}, '10.9.9.9');
    assert.equal(bad.statusCode, 400);
    assert.match(bad.body, /Check the number and try again/);
    assert.equal(bad.headers['content-security-policy'], "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'");
    assert.equal(bad.headers['cache-control'], 'no-store');
  });

  it('refuses forms from another origin, from an opaque origin, and without the form token, changing nothing', async () => {
    const { cookie, csrf } = await signInByForms();
    const created = await post('/console/apps', { _csrf: csrf, name: 'Edge', webhookUrl: appServer.url }, { cookie });
    assert.equal(created.statusCode, 303);
    const appId = /\/console\/apps\/([^?]+)/.exec(String(created.headers.location))![1]!;
    const secrets = async () => (await t.ctx.repos.apps.findApp(appId))!.secrets.length;
    const before = await secrets();
    for (const [headers, code] of [
      [{ cookie, origin: 'http://evil.example' }, 'CROSS_SITE_REFUSED'],
      [{ cookie, origin: 'null' }, 'CROSS_SITE_REFUSED'],
      [{ cookie, origin: 'http://localhost' }, 'CSRF_REFUSED'],
    ] as const) {
      // A token with its last character changed (to one it does not already end in).
      const fields: Record<string, string> = code === 'CSRF_REFUSED' ? { _csrf: `${csrf.slice(0, -1)}${csrf.endsWith('x') ? 'y' : 'x'}` } : { _csrf: csrf };
      const res = await post(`/console/apps/${appId}/secret/rotate`, fields, headers);
      assert.equal(res.statusCode, 403, `${headers.origin}: ${res.body}`);
      assert.match(res.body, new RegExp(code));
    }
    assert.equal(await secrets(), before, 'not rotated');
    // The same form with its token, from the console's origin, rotates.
    assert.equal((await post(`/console/apps/${appId}/secret/rotate`, { _csrf: csrf }, { cookie, origin: 'http://localhost' })).statusCode, 303);
    assert.equal(await secrets(), before + 1);
  });

  it('shows refusals on their forms: a private-address URL, a bot token for a room without the app, a manifest that is not JSON, another member\'s app', async () => {
    const { cookie, csrf } = await signInByForms();
    const refused = await post('/console/apps', { _csrf: csrf, name: 'X', webhookUrl: 'ftp://example.com/hook' }, { cookie });
    assert.equal(refused.statusCode, 400);
    assert.match(refused.body, /Give an https:\/\/ URL/);
    const appId = /\/console\/apps\/([^?]+)/.exec(String((await post('/console/apps', { _csrf: csrf, name: 'Y', webhookUrl: appServer.url }, { cookie })).headers.location))![1]!;
    const token = await post(`/console/apps/${appId}/bot-tokens`, { _csrf: csrf, roomId: 'no-such-room' }, { cookie });
    assert.equal(token.statusCode, 400);
    assert.match(token.body, /No bot token made: .*Add the app to the room first/);
    assert.deepEqual(await t.ctx.services.apps.credentials({ userId: (await t.ctx.repos.apps.findApp(appId))!.ownerId, deviceId: 'x' }, appId), []);

    const boundary = '----console-test';
    const multipart = (manifest: string) =>
      [`--${boundary}`, 'Content-Disposition: form-data; name="_csrf"', '', csrf, `--${boundary}`, 'Content-Disposition: form-data; name="manifest"', '', manifest, `--${boundary}--`, ''].join('\r\n');
    const notJson = await t.app.inject({ method: 'POST', url: `/console/apps/${appId}/manifest`, payload: multipart('{\n  "version": "1.0.0",\n  "commands": [,]\n}'), headers: { host: 'localhost', cookie, 'content-type': `multipart/form-data; boundary=${boundary}` } });
    assert.equal(notJson.statusCode, 400);
    assert.match(notJson.body, /not valid JSON \(line 3, column 16/);
    assert.equal((await t.ctx.repos.apps.findApp(appId))!.manifestVersion, null, 'nothing saved');
    // A multipart form is held to the form token as an urlencoded one is; and only the upload takes multipart.
    const withoutToken = [`--${boundary}`, 'Content-Disposition: form-data; name="manifest"', '', '{}', `--${boundary}--`, ''].join('\r\n');
    const multipartHeaders = { host: 'localhost', cookie, 'content-type': `multipart/form-data; boundary=${boundary}` };
    const noToken = await t.app.inject({ method: 'POST', url: `/console/apps/${appId}/manifest`, payload: withoutToken, headers: multipartHeaders });
    assert.equal(noToken.statusCode, 403);
    assert.match(noToken.body, /CSRF_REFUSED/);
    const elsewhere = await t.app.inject({ method: 'POST', url: `/console/apps/${appId}/secret/rotate`, payload: multipart('{}'), headers: multipartHeaders });
    assert.equal(elsewhere.statusCode, 415, 'a form posted urlencoded does not take multipart');

    const other = await signInByForms();
    const foreign = await get(`/console/apps/${appId}`, other.cookie);
    assert.equal(foreign.statusCode, 400);
    assert.match(foreign.body, /APP_NOT_FOUND/);
    assert.equal((await get(`/console/apps/${appId}/activity.csv`, other.cookie)).statusCode, 400, 'nor its activity');

    // Deleting asks for the app's name; with it, the app goes and the list follows.
    const unconfirmed = await post(`/console/apps/${appId}/delete`, { _csrf: csrf, confirm: 'Z' }, { cookie });
    assert.equal(unconfirmed.statusCode, 400);
    assert.match(unconfirmed.body, /Not deleted: type the app&#39;s name, Y, to confirm|Not deleted: type the app's name, Y, to confirm/);
    const deleted = await post(`/console/apps/${appId}/delete`, { _csrf: csrf, confirm: 'Y' }, { cookie });
    assert.deepEqual([deleted.statusCode, deleted.headers.location], [303, '/console']);
    assert.equal(await t.ctx.repos.apps.findApp(appId), null, 'gone');
  });

  it('the sign-in forms answer a reached limit as REST does: 429 with Retry-After', async () => {
    const phone = freshPhone();
    const address = addressOf(phone);
    let last = await post('/console/sign-in', { phone }, {}, address);
    for (let i = 0; i < 10 && last.statusCode === 200; i++) last = await post('/console/sign-in', { phone }, {}, address);
    assert.equal(last.statusCode, 429, last.body);
    assert.ok(Number(last.headers['retry-after']) > 0);
    assert.match(last.body, /Check the number and try again/, 'still the form, with the reason');
  });

  it('switches an app to test mode and back, and makes a test payments key shown once', async () => {
    const { cookie, csrf } = await signInByForms();
    const appId = /\/console\/apps\/([^?]+)/.exec(String((await post('/console/apps', { _csrf: csrf, name: 'Tester', webhookUrl: appServer.url }, { cookie })).headers.location))![1]!;
    assert.match((await get(`/console/apps/${appId}`, cookie)).body, /live: the payments the app asks for move members/);
    const on = await post(`/console/apps/${appId}/test-mode`, { _csrf: csrf, testMode: 'true' }, { cookie });
    assert.equal(on.statusCode, 200);
    assert.match(on.body, /<strong class="test-mode">test mode<\/strong>/);
    assert.equal((await t.db.collection<{ _id: string; testMode?: boolean }>('apps').findOne({ _id: appId }))?.testMode, true);
    const made = await post(`/console/apps/${appId}/payment-keys`, { _csrf: csrf, test: 'true' }, { cookie });
    assert.equal(made.statusCode, 303);
    const shown = await get(String(made.headers.location), cookie);
    assert.match(shown.body, /Your new test payments key/);
    assert.match(shown.body, /bpk_test_[A-Za-z0-9_-]{12}_[A-Za-z0-9_-]{43}/);
    assert.match(shown.body, /<td>Test payments key<\/td><td><code>bpk_test_/);
    const off = await post(`/console/apps/${appId}/test-mode`, { _csrf: csrf, testMode: 'false' }, { cookie });
    assert.match(off.body, /Live: the payments the app asks for from now on move members/);
  });

  it('filters the activity by outcome, kind and day', async () => {
    const { cookie, csrf } = await signInByForms();
    const appId = /\/console\/apps\/([^?]+)/.exec(String((await post('/console/apps', { _csrf: csrf, name: 'Z', webhookUrl: appServer.url }, { cookie })).headers.location))![1]!;
    for (let i = 0; i < 2; i++) assert.equal((await post(`/console/apps/${appId}/ping`, { _csrf: csrf }, { cookie })).statusCode, 200);
    const rows = async (query: string) => ((await get(`/console/apps/${appId}/activity?${query}`, cookie)).body.match(/<tr data-activity=/g) ?? []).length;
    const today = new Date().toISOString().slice(0, 10);
    const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
    assert.equal(await rows(''), 2);
    assert.equal(await rows('outcome=OK&event=ping'), 2);
    assert.equal(await rows('outcome=FAILED'), 0);
    assert.equal(await rows('event=invocation'), 0);
    assert.equal(await rows(`from=${today}&to=${today}`), 2, 'the "to" day is included');
    assert.equal(await rows(`from=${tomorrow}`), 0);
    assert.equal(await rows('outcome=<script>&from=not-a-day'), 2, 'a filter it cannot read is left out');
  });

  it('asks for the authenticator code when two-factor is on; a wrong one gives no session', async () => {
    const phone = freshPhone();
    const member = await signIn(t, phone);
    const setup = (await api(member, 'POST', '/api/users/2fa/setup')).json() as { secret: string };
    assert.equal((await api(member, 'POST', `/api/users/2fa/enable?code=${totp(setup.secret, Date.now())}`)).statusCode, 200);
    const address = addressOf(phone);
    assert.equal((await post('/console/sign-in', { phone }, {}, address)).statusCode, 200);
    const asked = await post('/console/sign-in/code', { phone, code: await lastCode(t.outbox, phone) }, {}, address);
    assert.equal(asked.statusCode, 200);
    assert.equal(asked.headers['set-cookie'], undefined);
    const twoFactorToken = /name="twoFactorToken" value="([^"]+)"/.exec(asked.body)![1]!;
    const wrong = await post('/console/sign-in/two-factor', { twoFactorToken, code: '123456' }, {}, address);
    assert.equal(wrong.statusCode, 400);
    assert.match(wrong.body, /Type the current code from your authenticator app/);
    assert.equal(wrong.headers['set-cookie'], undefined);
    const right = await post('/console/sign-in/two-factor', { twoFactorToken, code: totp(setup.secret, Date.now() + 30_000) }, {}, address);
    assert.equal(right.statusCode, 303, right.body);
    assert.match(String(right.headers['set-cookie']), /^__Host-console=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; Secure; SameSite=Strict/);
  });

  it('administrators grant reply time and act on the moderation queue, into the audit log; members get no such page', async () => {
    const admin = await signInByForms(ADMIN_PHONE);
    const member = await signInByForms();
    assert.equal((await get('/console/admin', member.cookie)).statusCode, 404);
    assert.equal((await post('/console/admin/reply-time', { _csrf: member.csrf, appId: 'x', seconds: '10' }, { cookie: member.cookie })).statusCode, 404, 'nor its forms');
    const appId = /\/console\/apps\/([^?]+)/.exec(String((await post('/console/apps', { _csrf: member.csrf, name: 'Slow', webhookUrl: appServer.url }, { cookie: member.cookie })).headers.location))![1]!;

    for (const seconds of ['0', '121', 'ten']) {
      const refused = await post('/console/admin/reply-time', { _csrf: admin.csrf, appId, seconds }, { cookie: admin.cookie });
      assert.equal(refused.statusCode, 400, seconds);
      assert.match(refused.body, /whole number of seconds from 1 to 120/);
    }
    const granted = await post('/console/admin/reply-time', { _csrf: admin.csrf, appId, seconds: '120' }, { cookie: admin.cookie });
    assert.equal(granted.statusCode, 200);
    assert.match(granted.body, /Slow may now take 120 s to reply/);
    assert.equal((await t.ctx.repos.apps.findApp(appId))!.timeoutMs, 120_000);

    const reporter = await signIn(t);
    const offender = await signIn(t);
    assert.equal((await api(reporter, 'POST', '/api/reports', { targetType: 'USER', targetId: offender.userId, reason: 'SPAM', comment: 'sells <b>things</b>' })).statusCode, 200);
    const queue = await get('/console/admin', admin.cookie);
    assert.match(queue.body, new RegExp(`data-reported="${offender.userId}"`));
    assert.match(queue.body, /sells &lt;b&gt;things&lt;\/b&gt;/, 'what a member wrote is escaped');
    const noReason = await post('/console/admin/reports/actions', { _csrf: admin.csrf, targetType: 'USER', targetId: offender.userId, action: 'DISMISS', reason: '' }, { cookie: admin.cookie });
    assert.equal(noReason.statusCode, 400);
    const acted = await post('/console/admin/reports/actions', { _csrf: admin.csrf, targetType: 'USER', targetId: offender.userId, action: 'DISMISS', reason: 'Not spam' }, { cookie: admin.cookie });
    assert.equal(acted.statusCode, 200, acted.body);
    assert.match(acted.body, /Done: 1 report decided/);
    assert.doesNotMatch(acted.body, new RegExp(`data-reported="${offender.userId}"`), 'out of the queue');
    assert.match(acted.body, /Not spam/, 'in the audit log');
  });

  it('sends a payment event that did not go through again from its row, with its delivery id', async () => {
    let answering = false;
    const shop = await startAppServer((_call, res) => {
      if (answering) res.writeHead(204).end();
      else json(res, { error: 'down' }, 500);
    });
    try {
      const { cookie, csrf } = await signInByForms();
      const appId = /\/console\/apps\/([^?]+)/.exec(String((await post('/console/apps', { _csrf: csrf, name: 'Shop', webhookUrl: shop.url }, { cookie })).headers.location))![1]!;
      const event = { type: 'payment.declined', id: 'evt-9', ts: 1, app: { id: appId }, payment: { id: 'pay-9', kind: 'charge', status: 'declined', amount: '1', currency: 'USDT' }, user: { id: 'u_x' } };
      const deliveryId = await t.ctx.services.appWebhooks.enqueue(appId, 'payment.declined', event, { retry: true });
      const deliveries = t.db.collection<{ _id: string; status: string }>('app_deliveries');
      await until(async () => (await deliveries.findOne({ _id: deliveryId }))?.status === 'GAVE_UP', 'the delivery given up');
      const list = await get(`/console/apps/${appId}/activity?event=payment.declined&outcome=FAILED`, cookie);
      const rowId = /<tr data-activity="([^"]+)"/.exec(list.body)![1]!;
      const row = await get(`/console/apps/${appId}/activity/${rowId}`, cookie);
      assert.match(row.body, /Send this payment event again/);
      answering = true;
      const replayed = await post(`/console/apps/${appId}/activity/${rowId}/replay`, { _csrf: csrf }, { cookie });
      assert.equal(replayed.statusCode, 200, replayed.body);
      assert.match(replayed.body, /Queued: the event goes out again with its original delivery id/);
      await until(() => shop.calls.length === 4, 'the replayed call');
      assert.equal(shop.calls[3]!.headers['x-service-delivery'], deliveryId);
      // A call that went through has no such button.
      const pinged = await post(`/console/apps/${appId}/ping`, { _csrf: csrf }, { cookie });
      assert.equal(pinged.statusCode, 200);
      const pingRow = /<tr data-activity="([^"]+)"/.exec((await get(`/console/apps/${appId}/activity?event=ping`, cookie)).body)![1]!;
      assert.doesNotMatch((await get(`/console/apps/${appId}/activity/${pingRow}`, cookie)).body, /Send this payment event again/);
      // A row id that cannot be one: no such row (APP_NOT_FOUND, 400 in the catalogue), for the page
      // and the replay alike, and nothing sent.
      for (const refused of [await get(`/console/apps/${appId}/activity/no%20such`, cookie), await post(`/console/apps/${appId}/activity/no%20such/replay`, { _csrf: csrf }, { cookie })]) {
        assert.equal(refused.statusCode, 400);
        assert.match(refused.body, /No such activity row<\/p><p>Code: <code>APP_NOT_FOUND<\/code>/);
      }
      assert.equal(shop.calls.length, 5, 'the ping, and no other call');
    } finally {
      await shop.close();
    }
  });
});
