import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from '@playwright/test';
import { launchChromium } from '../helpers/browser.js';
import { parse as parseCsv } from 'csv-parse/sync';
import { bearer, freshPhone, lastCode, signIn, startTestApp, type TestApp } from '../helpers/app.js';
import { json, startAppServer, verifyAsAnApp, type AppServer } from '../helpers/app-server.js';
import { httpAs, makeRoom } from '../helpers/factories.js';
import { multipart } from '../helpers/multipart.js';
import { withBiometricKey } from '../helpers/wallets.js';
import { limitSigned } from '../../src/wallets/limits.service.js';

// `npm run docs:screenshots` points this at docs/images/console; otherwise they go to a temporary folder.
const SHOTS = process.env.CONSOLE_SCREENSHOTS_DIR ?? path.join(os.tmpdir(), 'console-screenshots');
const ADMIN_PHONE = '+4915100000777';

const manifest = (flow = 'order-form') => ({
  version: '1.0.0',
  scopes: [],
  commands: [
    { id: 'hello', title: 'Hello' },
    { id: 'order', title: 'Order', flow },
  ],
  flows: [
    {
      id: 'order-form',
      mode: 'dynamic',
      views: [
        { id: 'size', title: 'Size', inputs: [{ id: 'size', type: 'text', label: 'Size', required: true }] },
        { id: 'details', title: 'Details', inputs: [{ id: 'count', type: 'number', label: 'How many', required: true, rules: { min: 1, max: 10 } }] },
      ],
    },
  ],
});

describe('the console in a real browser (Chromium driven by Playwright)', () => {
  let t: TestApp;
  let base: string;
  let browser: Browser;
  let appServer: AppServer;
  let broken: AppServer;
  let elsewhere: http.Server;
  let elsewhereUrl: string;
  const api = httpAs(() => t);

  before(async () => {
    mkdirSync(SHOTS, { recursive: true });
    t = await startTestApp({ ADMIN_PHONES: ADMIN_PHONE, WEBHOOK_ALLOW_PRIVATE: 'true', LIMIT_REQUEST_DEVICE_WAIT: '1' });
    const port = (await t.app.listen({ port: 0, host: '127.0.0.1' })) && (t.app.server.address() as AddressInfo).port;
    // localhost: a secure context for the browser, so the Secure, __Host- cookie is kept over plain HTTP.
    base = `http://localhost:${port}`;
    appServer = await startAppServer((call, res) => {
      const body = JSON.parse(call.raw.toString()) as { type: string; command?: string; step?: string; values?: Record<string, unknown> };
      if (body.type === 'ping') return json(res, { type: 'pong' });
      // The order form: the size, then the details, then an ack naming both answers.
      if (body.step === 'size') return json(res, { type: 'view', view: { id: 'details', title: 'How many?', blocks: [{ type: 'input', id: 'count' }] } });
      if (body.step === 'details') return json(res, { type: 'ack', message: `Ordered ${String(body.values?.count)}` });
      return json(res, { type: 'ack', message: `Hello from ${body.command}` });
    });
    broken = await startAppServer((_call, res) => json(res, { type: 'nope' }));
    // Another site, whose page posts a form to the console on load.
    elsewhere = http.createServer((req, res) => {
      const target = new URL(req.url ?? '/', 'http://x').searchParams.get('target') ?? '';
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(`<!doctype html><form id="f" method="post" action="${target}"><input name="x" value="1"></form><script>document.getElementById('f').submit()</script>`);
    });
    await new Promise<void>((resolve) => elsewhere.listen(0, '127.0.0.1', resolve));
    elsewhereUrl = `http://localhost:${(elsewhere.address() as AddressInfo).port}`;
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await appServer?.close();
    await broken?.close();
    if (elsewhere) await new Promise((resolve) => elsewhere.close(resolve));
    await t?.close();
  });

  /** Signs in through the pages with the texted code, by keyboard. */
  async function signInAs(page: Page, phone: string): Promise<void> {
    await page.goto(`${base}/console`);
    assert.match(page.url(), /\/console\/sign-in$/, 'a visitor is sent to sign in');
    await page.getByLabel('Phone number').focus();
    await page.keyboard.type(phone);
    await page.keyboard.press('Enter');
    await page.getByLabel('Six-digit code').waitFor({ timeout: 10_000 }).catch(async (error: unknown) => {
      throw new Error(`no code form; the page says: ${await page.textContent('main')}`, { cause: error });
    });
    await page.getByLabel('Six-digit code').focus();
    await page.keyboard.type(await lastCode(t.outbox, phone));
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { level: 1, name: 'My apps' }).waitFor();
  }

  // JPEG: the README's pictures stay small enough to keep in the repository.
  const shot = (page: Page, name: string) => page.screenshot({ path: path.join(SHOTS, `${name}.jpg`), type: 'jpeg', quality: 70, fullPage: true });

  it('a developer signs in, makes an app, fixes its manifest, saves a URL after its ping, tests a command, reads and downloads the activity, rotates the secret', async () => {
    const context = await browser.newContext({ baseURL: base, acceptDownloads: true });
    const page = await context.newPage();
    const phone = freshPhone();
    await page.goto(`${base}/console/sign-in`);
    assert.equal(await page.locator('.env').textContent(), 'test', 'the environment is shown');
    await shot(page, 'sign-in');
    await signInAs(page, phone);
    const cookie = (await context.cookies()).find((c) => c.name === '__Host-console');
    assert.ok(cookie, 'the session cookie is set');
    assert.deepEqual([cookie.httpOnly, cookie.secure, cookie.sameSite], [true, true, 'Strict']);

    // Create an app: its signing secret is shown once; a reload does not show it again.
    await page.getByLabel('Name').fill('Pizza place');
    await page.getByLabel('Webhook URL').fill(appServer.url);
    await page.getByRole('button', { name: 'Create app' }).click();
    await page.getByRole('heading', { name: 'Your webhook signing secret' }).waitFor();
    const secret = (await page.locator('[data-secret]').textContent())!;
    assert.match(secret, /^whsec_/);
    const appId = /\/console\/apps\/([^/?]+)/.exec(page.url())![1]!;
    const response = await page.reload();
    assert.equal(response?.headers()['cache-control'], 'no-store');
    assert.match(response?.headers()['content-security-policy'] ?? '', /default-src 'none'/);
    assert.equal(await page.locator('[data-secret]').count(), 0, 'not shown again');
    assert.ok((await page.textContent('main'))!.includes('shown once already'));

    // A manifest with a mistake, uploaded as a file: the problem is shown at its line.
    await page.goto(`${base}/console/apps/${appId}/manifest`);
    await page.getByLabel('Or upload a file').setInputFiles({ name: 'manifest.json', mimeType: 'application/json', buffer: Buffer.from(JSON.stringify(manifest('no-such-flow'))) });
    await page.getByRole('button', { name: 'Check and save' }).click();
    const marked = page.locator('ol.source li.bad');
    await marked.first().waitFor();
    assert.equal(await marked.count(), 1);
    const markedText = (await marked.textContent())!;
    assert.match(markedText, /"flow": "no-such-flow"/, 'marked on the line that holds the mistake');
    assert.match(markedText, /commands\.1\.flow/);
    await shot(page, 'manifest-error');
    // Fixed in the editor, then saved.
    await page.getByLabel('Manifest (JSON)').fill(JSON.stringify(manifest(), null, 2));
    await page.getByRole('button', { name: 'Check and save' }).click();
    await page.getByText('Saved version 1.0.0').waitFor();
    assert.equal((await api(await signIn(t), 'GET', `/api/apps/${appId}`)).json().code, 'APP_NOT_FOUND', 'another member does not see it');

    // The webhook URL is saved only after it answers a signed ping.
    await page.goto(`${base}/console/apps/${appId}`);
    await page.getByLabel('New webhook URL').fill(broken.url);
    await page.getByRole('button', { name: 'Ping it and save' }).click();
    await page.getByText(/Not saved: .* did not answer the signed ping/).waitFor();
    assert.equal((await t.ctx.repos.apps.findApp(appId))!.webhookUrl, appServer.url);
    const next = `${appServer.url}/v2`;
    await page.getByLabel('New webhook URL').fill(next);
    await page.getByRole('button', { name: 'Ping it and save' }).click();
    await page.getByText(`Saved: ${next} answered the signed ping`).waitFor();
    assert.equal((await t.ctx.repos.apps.findApp(appId))!.webhookUrl, next);
    // The ping was signed with the secret the page showed.
    const ping = appServer.calls.at(-1)!;
    assert.ok(verifyAsAnApp(secret, ping, Math.floor(Date.now() / 1000), new Set()), 'signed with the secret shown once');
    await shot(page, 'app');

    // The test console: run a command as the tester.
    await page.goto(`${base}/console/apps/${appId}/test`);
    await page.getByLabel('Command').selectOption('hello');
    await page.getByRole('button', { name: 'Run as the tester' }).click();
    await page.getByRole('heading', { name: 'Reply: ack' }).waitFor();
    assert.match((await page.locator('[data-reply]').textContent())!, /Hello from hello/);
    await shot(page, 'test-console');
    // A dynamic form, step by step.
    await page.getByLabel('Command').selectOption('order');
    await page.getByLabel('First view').fill('size');
    await page.getByLabel('Answers (JSON object by input id; empty for none)').fill('{"size": "l"}');
    await page.getByRole('button', { name: 'Run as the tester' }).click();
    await page.getByRole('heading', { name: 'Next step: How many?' }).waitFor();
    await page.getByLabel('Answers to this step').fill('{"count": 2}');
    await page.getByRole('button', { name: 'Answer this step' }).click();
    await page.getByRole('heading', { name: 'Reply: ack' }).waitFor();
    assert.match((await page.locator('[data-reply]').textContent())!, /Ordered 2/);
    // The call's row: what was sent and what came back.
    await page.getByRole('link', { name: /^invocation / }).click();
    assert.match((await page.locator('[data-request]').textContent())!, /"step": "details"/);
    assert.match((await page.locator('[data-reply-body]').textContent())!, /"message": "Ordered 2"/);
    await shot(page, 'activity-row');

    // The activity: every call, filtered by outcome, and the CSV download.
    await page.goto(`${base}/console/apps/${appId}/activity`);
    const rows = page.locator('tr[data-activity]');
    assert.equal(await rows.count(), 5, 'two pings and three invocations');
    await page.getByLabel('Outcome').selectOption('FAILED');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(/outcome=FAILED/);
    assert.equal(await rows.count(), 1);
    assert.match((await rows.first().textContent())!, /CONTRACT.*type: expected "pong"/);
    await shot(page, 'activity');
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'Download all as CSV' }).click()]);
    const csv = parseCsv(await readFile((await download.path())!), { columns: true }) as Record<string, string>[];
    assert.equal(csv.length, 5);
    assert.ok(csv.some((row) => row.outcome === 'FAILED' && row.detail === 'type: expected "pong"'), 'the CSV says what broke');

    // Rotation: the new secret once, and the overlap's time left.
    await page.goto(`${base}/console/apps/${appId}`);
    await page.getByRole('button', { name: 'Rotate the secret' }).click();
    await page.getByRole('heading', { name: 'Your new webhook signing secret' }).waitFor();
    const rotated = (await page.locator('[data-secret]').textContent())!;
    assert.notEqual(rotated, secret);
    assert.match((await page.locator('[data-overlap]').textContent())!, /^23 h 59 min left$|^24 h 0 min left$/);

    // A form posted from another site changes nothing.
    const secretsBefore = (await t.ctx.repos.apps.findApp(appId))!.secrets.length;
    const attack = await context.newPage();
    await attack.goto(`${elsewhereUrl}/?target=${encodeURIComponent(`${base}/console/apps/${appId}/secret/rotate`)}`);
    await attack.waitForURL(new RegExp(`^${base}/console/apps/`));
    assert.match((await attack.textContent('main'))!, /another site/);
    // Nor does one from this origin without the session's form token.
    const noToken = await page.request.post(`${base}/console/apps/${appId}/secret/rotate`, { form: { x: '1' }, maxRedirects: 0 });
    assert.equal(noToken.status(), 403);
    assert.match(await noToken.text(), /CSRF_REFUSED/);
    assert.equal((await t.ctx.repos.apps.findApp(appId))!.secrets.length, secretsBefore, 'not rotated');

    // Phone width: nothing wider than the screen.
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(`${base}/console/apps/${appId}`);
    // Run in the page: the document's width (the test's own lib has no DOM types).
    assert.ok(await page.evaluate('document.documentElement.scrollWidth <= 390'), 'fits a phone\'s width');
    await shot(page, 'app-phone');

    // Not an administrator: no administrator page, the same answer as a missing one.
    const admin = await page.goto(`${base}/console/admin`);
    assert.equal(admin?.status(), 404);

    // The browser session is a device of the member: revoking it signs the browser out.
    const phoneSession = await signIn(t, phone);
    const devices = (await api(phoneSession, 'GET', '/api/devices')).json() as { id: string; name: string }[];
    const browserDevice = devices.find((d) => d.name === 'Developer console (browser)')!;
    assert.ok(browserDevice, 'listed with the member\'s devices');
    assert.equal((await t.app.inject({ method: 'DELETE', url: `/api/devices/${browserDevice.id}`, headers: bearer(phoneSession.accessToken) })).statusCode, 204);
    await page.goto(`${base}/console`);
    assert.match(page.url(), /\/console\/sign-in$/);
    await context.close();
  });

  it('a member\'s HTML and SVG attachments, opened by a developer signed in to the console, run nothing', async () => {
    const context = await browser.newContext({ baseURL: base, acceptDownloads: true });
    const page = await context.newPage();
    await signInAs(page, freshPhone());
    const consoleTitle = await page.title();
    // What the attack did: change the title, read a console page with the session, and report home.
    const attack = 'document.title = "pwned"; fetch("/console/apps").then(() => fetch("/console/stolen"));';
    const files = [
      { filename: 'invoice.html', contentType: 'text/html', content: Buffer.from(`<!doctype html><title>Invoice</title><script>${attack}</script>`) },
      { filename: 'logo.svg', contentType: 'image/svg+xml', content: Buffer.from(`<svg xmlns="http://www.w3.org/2000/svg" onload='${attack}'><script>${attack}</script></svg>`) },
      { filename: 'photo.jpg', contentType: 'text/html', content: Buffer.from(`<script>${attack}</script>`) },
    ];
    const [owner, member] = await Promise.all([signIn(t), signIn(t)]);
    const room = await makeRoom(t, owner, { members: [member] });
    const body = multipart(files, { payload: JSON.stringify({ roomId: room.id, message: 'Your invoice' }) });
    const uploaded = await t.app.inject({ method: 'POST', url: `/api/messages/${room.id}/attachments`, headers: { ...bearer(member.accessToken), ...body.headers }, payload: body.payload });
    assert.equal(uploaded.statusCode, 204, uploaded.body);
    const requests: string[] = [];
    context.on('request', (request) => requests.push(new URL(request.url()).pathname));
    for (const attachment of await t.db.collection('attachments').find({ roomId: room.id }).toArray()) {
      const ticket = await api(member, 'POST', `/api/messages/${attachment.messageId}/attachments/${attachment._id}/ticket`);
      // The link on the console's own origin: the worst place it could be opened.
      const link = `${base}${new URL(ticket.json().url as string).pathname}`;
      const download = page.waitForEvent('download', { timeout: 10_000 });
      await page.goto(link).catch(() => undefined);
      assert.equal((await download).suggestedFilename(), attachment.filename, `${attachment.filename} is a download, not a page`);
      // And opened in a frame of a console page, as a link in a page might be: still nothing runs.
      await page.goto(`${base}/console`);
      await page.evaluate(`(() => { const f = document.createElement('iframe'); f.src = ${JSON.stringify(link)}; document.body.append(f); })()`).catch(() => undefined);
      await page.waitForTimeout(500);
      assert.equal(await page.title(), consoleTitle, `${attachment.filename} changed nothing`);
    }
    assert.deepEqual(requests.filter((url) => url === '/console/stolen' || url === '/console/apps'), [], 'no script of a member reached the console');
    await context.close();
  });

  it('an administrator refuses a wallet limit request', async () => {
    const member = await signIn(t);
    const { signWith, nonce } = await withBiometricKey(t, member);
    // A device may ask once it is older than LIMIT_REQUEST_DEVICE_WAIT (1 s here).
    t.clock.advance(2_000);
    const n = await nonce();
    const asked = await api(member, 'POST', '/api/wallet-limits/requests', { tier: 'TIER_2', duration: 'DAYS_7', reason: 'Rent', biometric: { nonce: n, signature: signWith(limitSigned(n, 'TIER_2', 'DAYS_7')) } });
    assert.equal(asked.statusCode, 200, asked.body);
    const requestId = asked.json().id as string;

    const context = await browser.newContext({ baseURL: base });
    const page = await context.newPage();
    await signInAs(page, ADMIN_PHONE);
    await page.getByRole('link', { name: 'Administration' }).click();
    await page.getByRole('heading', { level: 1, name: 'Administration' }).waitFor();
    const row = page.locator(`tr[data-limit-request="${requestId}"]`);
    assert.match((await row.textContent())!, /TIER_2.*DAYS_7.*Rent/s);
    await shot(page, 'admin');
    await row.getByRole('button', { name: /Refuse/ }).click();
    await page.getByText(`The request of ${member.userId} is refused.`).waitFor();
    assert.equal(await page.locator(`tr[data-limit-request="${requestId}"]`).count(), 0);
    const refused = (await api(await signIn(t, ADMIN_PHONE), 'GET', '/api/admin/wallet-limit-requests?status=REFUSED')).json().items as { id: string }[];
    assert.ok(refused.some((r) => r.id === requestId), 'refused, as the REST list says');
    await context.close();
  });
});
