import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import type { Browser, BrowserContext, Page } from '@playwright/test';
import { launchChromium } from '../helpers/browser.js';
import { clientLibraryEntry, installClientLibrary } from '../helpers/packages.js';
import { projectRoot } from '../helpers/files.js';
import { freshPhone, lastCode, signIn, startTestApp, type Session, type TestApp } from '../helpers/app.js';
import { httpAs, makeRoom, postMessage } from '../helpers/factories.js';
import { holdsSockets, spawnHub, type HubProcess } from '../helpers/hubs.js';
import { startFront, type Front } from '../helpers/nginx.js';
import { until } from '../helpers/wait.js';

interface WebChatServer {
  url: string;
  close(): Promise<void>;
}

/**
 * The web chat example (examples/web-chat) in Chromium, bundled with the client library as installed
 * from its packed tarball (the web build): signing in with the texted code, an invitation accepted from
 * its device event, messages both ways, going offline and back (missed messages fetched, a message
 * written offline sent once), a reload that continues from IndexedDB without signing in again, the hub
 * holding the page's socket killed (two hubs behind the production nginx), and offline past the inbox
 * bound (one resync, said on the page).
 */
describe('the web chat example in Chromium, on the packed client library', () => {
  let work: string;
  let page: WebChatServer;
  let t: TestApp;
  const hubs: HubProcess[] = [];
  let front: Front;
  let browser: Browser;
  let context: BrowserContext;
  let apiBase: string;
  const api = httpAs(() => t);

  before(async () => {
    work = await mkdtemp(path.join(os.tmpdir(), 'web-chat-'));
    await installClientLibrary(work);
    const { serveWebChat } = (await import(pathToFileURL(path.join(projectRoot, 'examples', 'web-chat', 'serve.mjs')).href)) as { serveWebChat(options: { library: string }): Promise<WebChatServer> };
    page = await serveWebChat({ library: clientLibraryEntry(work) });
    t = await startTestApp({ CORS_ORIGINS: page.url.replace(/\/$/, ''), SIGNIN_CODES_PER_ADDRESS: '1000', SIGNIN_ATTEMPTS_PER_ADDRESS: '1000', INBOX_MAX_EVENTS: '20' });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const apiPort = (t.app.server.address() as AddressInfo).port;
    let browserStarted: Browser;
    [hubs[0], hubs[1], browserStarted] = await Promise.all([spawnHub(t.config), spawnHub(t.config), launchChromium()]);
    browser = browserStarted;
    // The production front: the page talks to one address, nginx routes REST to the api and the socket to a hub.
    front = await startFront({ api: [apiPort, apiPort], hubs: hubs.map((hub) => hub.port) });
    apiBase = front.url;
    context = await browser.newContext();
  });
  after(async () => {
    await context?.close();
    await browser?.close();
    await front?.stop();
    await Promise.all(hubs.map((hub) => hub.kill('SIGKILL')));
    await page?.close();
    await t?.close();
    await rm(work, { recursive: true, force: true });
  });

  const stateOf = (tab: Page) => tab.locator('#state').textContent();
  let history: () => Promise<string[]>;
  const lines = (tab: Page) => tab.locator('#messages li:not(.pending)').allTextContents();
  async function storedTexts(poster: Session, roomId: string): Promise<string[]> {
    const res = await api(poster, 'GET', `/api/messages/${roomId}?limit=100`);
    return (res.json() as { items: { message: string }[] }).items.map((m) => m.message);
  }

  it('signs in, joins by invitation, chats both ways, catches up after going offline, continues after a reload, outlives its hub, and resyncs past the inbox bound', async () => {
    const tab = await context.newPage();
    history = () => tab.evaluate(() => (globalThis as unknown as { stateHistory: string[] }).stateHistory);
    const errors: string[] = [];
    tab.on('pageerror', (error) => errors.push(error.message));
    await tab.goto(`${page.url}?${new URLSearchParams({ api: apiBase, hub: apiBase })}`);
    await until(async () => (await stateOf(tab)) === 'signed-out', 'the page loaded signed out');

    const phone = freshPhone();
    await tab.fill('#phone', phone);
    await tab.click('#send-code');
    await until(() => lastCode(t.outbox, phone).then(() => true, () => false), 'the code was texted');
    await tab.fill('#code', await lastCode(t.outbox, phone));
    await tab.click('#sign-in');
    await until(async () => (await stateOf(tab)) === 'connected', 'the page connected', 15_000);
    const userId = await tab.evaluate(() => (globalThis as unknown as { chat: { userId: string } }).chat.userId);

    // Someone the user is not connected to puts them in a room: an invitation, a device event.
    const poster = await signIn(t);
    const room = await makeRoom(t, poster, { name: 'Browser room' });
    // 202: invited (not connected, so not a member until they accept).
    assert.equal((await api(poster, 'POST', `/api/rooms/${room.id}/members/${userId}`)).statusCode, 202);
    await tab.click(`[data-invitation="${room.id}"]`, { timeout: 10_000 });
    await tab.click(`[data-room="${room.id}"]`, { timeout: 10_000 });
    await until(async () => (await tab.locator('#room-name').textContent()) === 'Browser room', 'the room opened');

    await postMessage(t, poster, room.id, 'hello from REST');
    await until(async () => (await lines(tab)).some((line) => line.endsWith(': hello from REST')), 'the message reached the page', 10_000);
    await tab.fill('#text', 'hello from Chromium');
    await tab.click('#send');
    await until(async () => (await storedTexts(poster, room.id)).includes('hello from Chromium'), 'the page\'s message was stored', 10_000);

    // Offline: the socket drops; what was posted meanwhile is fetched when back, what was written is sent once.
    await context.setOffline(true);
    await until(async () => (await stateOf(tab)) !== 'connected', 'the page noticed it is offline', 30_000);
    await postMessage(t, poster, room.id, 'posted while the page was offline');
    await tab.fill('#text', 'written offline');
    await tab.click('#send');
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    assert.ok(!(await storedTexts(poster, room.id)).includes('written offline'));
    await context.setOffline(false);
    await until(async () => (await stateOf(tab)) === 'connected', 'the page is back', 30_000);
    await until(async () => (await lines(tab)).some((line) => line.endsWith(': posted while the page was offline')), 'the missed message is shown', 10_000);
    await until(async () => (await storedTexts(poster, room.id)).includes('written offline'), 'the offline message was sent', 20_000);

    // A reload: the session, the position and the queue come back from IndexedDB.
    await tab.reload();
    await until(async () => (await stateOf(tab)) === 'connected', 'the reloaded page connected without signing in', 15_000);
    await tab.click(`[data-room="${room.id}"]`, { timeout: 10_000 });
    await tab.fill('#text', 'after the reload');
    await tab.click('#send');
    await until(async () => (await storedTexts(poster, room.id)).includes('after the reload'), 'the message after the reload was stored', 10_000);

    // The hub holding the page's socket dies: the page reconnects through nginx to the other one and shows what was posted.
    const victim = hubs[(await Promise.all(hubs.map(holdsSockets))).indexOf(true)]!;
    const connectedBefore = (await history()).filter((state) => state === 'connected').length;
    await victim.kill('SIGKILL');
    await postMessage(t, poster, room.id, 'posted as a hub died');
    await until(async () => (await lines(tab)).some((line) => line.endsWith(': posted as a hub died')), 'the message posted as the hub died is shown', 20_000);
    await until(async () => (await history()).filter((state) => state === 'connected').length > connectedBefore, 'the page connected again', 20_000);

    // Offline past the inbox bound (20 here): one resync, said on the page.
    await context.setOffline(true);
    await until(async () => (await stateOf(tab)) !== 'connected', 'the page noticed it is offline', 30_000);
    for (let i = 0; i < 25; i++) {
      await t.ctx.events.toDevice((await tab.evaluate(() => (globalThis as unknown as { chat: { deviceId: string } }).chat.deviceId)), 'contact.request', { requestId: `flood-${i}`, sender: { id: poster.userId, deleted: false, displayName: null, avatarUrl: null, avatarThumbnailUrl: null }, customMessage: `flood ${i}` });
    }
    await context.setOffline(false);
    await until(async () => (await tab.locator('#notice').textContent())?.startsWith('resynced (inbox, INBOX_BOUND)') ?? false, 'the page says it resynced its inbox', 30_000);
    await until(async () => (await stateOf(tab)) === 'connected', 'the page is back after the resync', 30_000);

    const stored = await storedTexts(poster, room.id);
    for (const text of ['hello from REST', 'hello from Chromium', 'posted while the page was offline', 'written offline', 'after the reload', 'posted as a hub died']) {
      assert.equal(stored.filter((m) => m === text).length, 1, `${text} is stored once`);
    }
    const shown = await lines(tab);
    assert.equal(new Set(shown).size, shown.length, `no line twice: ${shown.join(' | ')}`);
    const states = await history();
    assert.ok(states.includes('catching-up'), states.join(' → '));
    assert.deepEqual(errors, []);
  });
});
