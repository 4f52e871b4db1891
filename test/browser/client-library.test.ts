import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import type { Browser, BrowserContext, Page } from '@playwright/test';
import { launchChromium } from '../helpers/browser.js';
import { clientLibraryEntry, installClientLibrary } from '../helpers/client-library.js';
import { projectRoot } from '../helpers/files.js';
import { freshPhone, lastCode, signIn, startTestApp, type Session, type TestApp } from '../helpers/app.js';
import { httpAs, makeRoom, postMessage } from '../helpers/factories.js';
import { spawnHub, type HubProcess } from '../helpers/hubs.js';
import { until } from '../helpers/wait.js';

interface WebChatServer {
  url: string;
  close(): Promise<void>;
}

/**
 * The web chat example (examples/web-chat) in Chromium, bundled with the client library as installed
 * from its packed tarball (the web build): signing in with the texted code, an invitation accepted from
 * its device event, messages both ways, going offline and back (missed messages fetched, a message
 * written offline sent once), and a reload that continues from IndexedDB without signing in again.
 */
describe('the web chat example in Chromium, on the packed client library', () => {
  let work: string;
  let page: WebChatServer;
  let t: TestApp;
  let hub: HubProcess;
  let browser: Browser;
  let context: BrowserContext;
  let apiBase: string;
  const api = httpAs(() => t);

  before(async () => {
    work = await mkdtemp(path.join(os.tmpdir(), 'web-chat-'));
    await installClientLibrary(work);
    const { serveWebChat } = (await import(pathToFileURL(path.join(projectRoot, 'examples', 'web-chat', 'serve.mjs')).href)) as { serveWebChat(options: { library: string }): Promise<WebChatServer> };
    page = await serveWebChat({ library: clientLibraryEntry(work) });
    t = await startTestApp({ CORS_ORIGINS: page.url.replace(/\/$/, ''), SIGNIN_CODES_PER_ADDRESS: '1000', SIGNIN_ATTEMPTS_PER_ADDRESS: '1000' });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    apiBase = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
    [hub, browser] = await Promise.all([spawnHub(t.config), launchChromium()]);
    context = await browser.newContext();
  });
  after(async () => {
    await context?.close();
    await browser?.close();
    await hub?.kill();
    await page?.close();
    await t?.close();
    await rm(work, { recursive: true, force: true });
  });

  const stateOf = (tab: Page) => tab.locator('#state').textContent();
  const lines = (tab: Page) => tab.locator('#messages li:not(.pending)').allTextContents();
  async function storedTexts(poster: Session, roomId: string): Promise<string[]> {
    const res = await api(poster, 'GET', `/api/messages/${roomId}?limit=100`);
    return (res.json() as { items: { message: string }[] }).items.map((m) => m.message);
  }

  it('signs in, joins by invitation, chats both ways, catches up after going offline, and continues after a reload', async () => {
    const tab = await context.newPage();
    const errors: string[] = [];
    tab.on('pageerror', (error) => errors.push(error.message));
    await tab.goto(`${page.url}?${new URLSearchParams({ api: apiBase, hub: `http://127.0.0.1:${hub.port}` })}`);
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

    const stored = await storedTexts(poster, room.id);
    for (const text of ['hello from REST', 'hello from Chromium', 'posted while the page was offline', 'written offline', 'after the reload']) {
      assert.equal(stored.filter((m) => m === text).length, 1, `${text} is stored once`);
    }
    const shown = await lines(tab);
    assert.equal(new Set(shown).size, shown.length, `no line twice: ${shown.join(' | ')}`);
    const history = await tab.evaluate(() => (globalThis as unknown as { stateHistory: string[] }).stateHistory);
    assert.ok(history.includes('catching-up'), history.join(' → '));
    assert.deepEqual(errors, []);
  });
});
