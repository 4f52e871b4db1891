import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { execFileSync, type ChildProcess } from 'node:child_process';
import os from 'node:os';
import type { Browser, BrowserContext, Page } from '@playwright/test';
import { launchChromium } from '../helpers/browser.js';
import type { types as ms } from 'mediasoup';
import { startSfuNode, type SfuNode } from '../../src/sfu/sfu-node.js';
import type { Workers } from '../../workers/main.js';
import { freshPhone, signIn, startTestApp, startTestWorkers, type Session, type TestApp } from '../helpers/app.js';
import { connectAll, httpAs } from '../helpers/factories.js';
import { spawnHub, type HubProcess } from '../helpers/hubs.js';
import { spawnRole } from '../helpers/processes.js';
import { until } from '../helpers/wait.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const TURN_SECRET = 'browser-calls-turn-secret-0123456789';

interface Turn {
  child: ChildProcess;
  port: number;
  turnUrls: string;
  stunUrls: string;
}

/** What the page's RoomCall.stats() answers. */
interface RoomStats {
  consumers: { producerId: string; kind: 'audio' | 'video'; bytes: number }[];
  firstByteMs?: number;
  left: string[];
}

/** What the example page puts on `window` (examples/calls/index.html and calls.js), as the test uses it. */
interface ExampleWindow {
  calls: {
    OneToOneCall: new (device: ExampleWindow['device'], options: { policy: 'all' | 'relay' }) => ExampleWindow['peer'];
    RoomCall: new (device: ExampleWindow['device']) => ExampleWindow['roomCall'];
  };
  device: { next<T>(event: string): Promise<T>; events: { event: string }[] };
  peer: { call(calleeId: string, media: string): Promise<string>; answer(callId: string): Promise<string>; stats(): Promise<PeerStats>; hangUp(): Promise<void> };
  roomCall: { join(where: { roomId?: string; callId?: string }): Promise<string>; stats(): Promise<RoomStats>; leave(): Promise<void> };
  joined: Promise<string>;
}

/** What the page's OneToOneCall.stats() answers. */
interface PeerStats {
  connectionState: string;
  local?: string;
  remote?: string;
  received: { audio: number; video: number };
}

/**
 * Calls between real WebRTC clients: Chromium with fake camera and microphone, running the calls
 * example (examples/calls, mediasoup-client for room calls, the browser's own RTCPeerConnection for
 * 1:1 calls) against the service, its SFU node and a real coturn.
 */
describe('calls between browsers (Chromium with fake media, the calls example)', () => {
  let t: TestApp;
  let workers: Workers;
  let sfu: SfuNode;
  let turn: Turn;
  let hub: HubProcess;
  let browser: Browser;
  let example: { url: string; close(): Promise<void> };
  let apiBase: string;
  const contexts: BrowserContext[] = [];
  /** The SFU's WebRTC transports still open, seen through mediasoup's observer. */
  const openTransports = new Set<string>();
  const api = httpAs(() => t);

  before(async () => {
    const { startTurn } = (await import(pathToFileURL(path.join(root, 'scripts/stack.mjs')).href)) as { startTurn(options: { secret: string; minPort: number; maxPort: number }): Promise<Turn> };
    const { serveCallsExample } = (await import(pathToFileURL(path.join(root, 'examples/calls/serve.mjs')).href)) as { serveCallsExample(): Promise<{ url: string; close(): Promise<void> }> };
    [turn, example] = await Promise.all([startTurn({ secret: TURN_SECRET, minPort: 52000, maxPort: 52999 }), serveCallsExample()]);
    t = await startTestApp({
      TURN_SECRET,
      TURN_URLS: turn.turnUrls,
      STUN_URLS: turn.stunUrls,
      // The example page is on its own origin: the api lets it call (CORS_ORIGINS).
      CORS_ORIGINS: example.url.replace(/\/$/, ''),
      SFU_RTC_MIN_PORT: '42000',
      SFU_RTC_MAX_PORT: '42999',
    });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    apiBase = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
    const mediasoup = await import('mediasoup');
    mediasoup.observer.on('newworker', (worker: ms.Worker) =>
      worker.observer.on('newrouter', (router: ms.Router) =>
        router.observer.on('newtransport', (transport: ms.Transport) => {
          openTransports.add(transport.id);
          transport.observer.once('close', () => openTransports.delete(transport.id));
        }),
      ),
    );
    [workers, sfu, hub] = await Promise.all([startTestWorkers(t), startSfuNode(t.ctx.platform, { port: 0 }), spawnHub(t.config)]);
    browser = await launchChromium([
      // A camera and microphone that make test patterns, allowed without asking.
      '--use-fake-device-for-media-stream', '--use-fake-ui-for-media-stream',
      // Host candidates as addresses, not mDNS names (nothing resolves .local here).
      '--disable-features=WebRtcHideLocalIpsWithMdns',
    ]);
  });
  after(async () => {
    await Promise.allSettled(contexts.map((context) => context.close()));
    await browser?.close();
    await hub?.kill();
    await sfu?.close();
    await workers?.close();
    await example?.close();
    turn?.child.kill('SIGKILL');
    await t?.close();
  });

  /** A page of the example signed in as `session`, its socket connected. */
  async function pageFor(session: Session): Promise<Page> {
    const context = await browser.newContext();
    contexts.push(context);
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    page.on('console', (message) => message.type() === 'error' && errors.push(message.text()));
    const query = new URLSearchParams({ api: apiBase, hub: `http://127.0.0.1:${hub.port}`, token: session.accessToken });
    await page.goto(`${example.url}?${query}`);
    await page.waitForFunction("document.getElementById('state')?.textContent === 'connected'", undefined, { timeout: 15_000 }).catch((error: unknown) => {
      throw new Error(`the page did not connect (${errors.join('; ')}): ${String(error)}`);
    });
    return page;
  }

  it('a 1:1 call forced through TURN connects on relay candidates with the issued credentials, and both sides receive audio and video', async () => {
    const a = await signIn(t, freshPhone(), { name: 'Caller', platform: 'WEB' });
    const b = await signIn(t, freshPhone(), { name: 'Callee', platform: 'WEB' });
    await connectAll(t, a, [b]);
    const [pageA, pageB] = await Promise.all([pageFor(a), pageFor(b)]);
    // The callee answers whatever rings; the caller calls and offers once answered. The callee's
    // camera takes a second to open, as a phone's may: the caller's offer arrives meanwhile, and the
    // answer must still carry the callee's tracks (it once said "receive only" then: seen under load).
    // (A page script: this project's types have no DOM.)
    await pageB.evaluate(`(() => {
      const open = navigator.mediaDevices.getUserMedia.bind(navigator.mediaDevices);
      navigator.mediaDevices.getUserMedia = async (constraints) => {
        await new Promise((resolve) => setTimeout(resolve, 1000));
        return open(constraints);
      };
    })()`);
    await pageB.evaluate(() => {
      const w = globalThis as unknown as ExampleWindow;
      w.peer = new w.calls.OneToOneCall(w.device, { policy: 'relay' });
      void w.device.next<{ callId: string }>('call.incoming').then((incoming) => w.peer.answer(incoming.callId));
    });
    const callId = await pageA.evaluate(async (calleeId) => {
      const w = globalThis as unknown as ExampleWindow;
      w.peer = new w.calls.OneToOneCall(w.device, { policy: 'relay' });
      return w.peer.call(calleeId, 'VIDEO');
    }, b.userId);
    const statsOf = (page: Page) => page.evaluate(() => (globalThis as unknown as ExampleWindow).peer.stats());
    let last: PeerStats[] = [];
    await until(
      async () => {
        last = await Promise.all([statsOf(pageA), statsOf(pageB)]);
        return last.every((s) => s.connectionState === 'connected' && s.received.audio > 0 && s.received.video > 0);
      },
      'both pages to receive audio and video',
      20_000,
    ).catch((error: unknown) => assert.fail(`${String(error)}: ${JSON.stringify(last)}`));
    for (const stats of last) {
      assert.equal(stats.local, 'relay', `the selected pair's local candidate is a relay: ${JSON.stringify(stats)}`);
      assert.equal(stats.remote, 'relay', `and so is the remote one: ${JSON.stringify(stats)}`);
    }
    await pageA.evaluate(() => (globalThis as unknown as ExampleWindow).peer.hangUp());
    assert.equal((await api(b, 'GET', `/api/calls/${callId}`)).json().state, 'ENDED');
  });

  /** A private group of three, each member's page connected. */
  async function groupOfThree() {
    const sessions = await Promise.all(['One', 'Two', 'Three'].map((name) => signIn(t, freshPhone(), { name, platform: 'WEB' })));
    const [one, two, three] = sessions as [Session, Session, Session];
    await connectAll(t, one, [two, three]);
    const room = await api(one, 'POST', '/api/rooms', { type: 'PRIVATE_GROUP', name: 'Browser call', memberIds: [two.userId, three.userId] });
    assert.equal(room.statusCode, 200, room.body);
    const pages = (await Promise.all(sessions.map((session) => pageFor(session)))) as [Page, Page, Page];
    return { roomId: room.json().id as string, sessions: [one, two, three] as const, pages };
  }

  const roomStatsOf = (page: Page) => page.evaluate(() => (globalThis as unknown as ExampleWindow).roomCall.stats());
  const leaveOn = (page: Page) => page.evaluate(() => (globalThis as unknown as ExampleWindow).roomCall.leave());

  /** The first page starts the room's call, the others answer its ring; resolves once every page receives the other two's audio and video. */
  async function roomCallOfThree(roomId: string, pages: readonly Page[]): Promise<{ callId: string; stats: RoomStats[] }> {
    const [first, ...others] = pages;
    for (const page of others) {
      await page.evaluate(() => {
        const w = globalThis as unknown as ExampleWindow;
        w.roomCall = new w.calls.RoomCall(w.device);
        w.joined = w.device.next<{ callId: string }>('room-call.incoming').then((incoming) => w.roomCall.join({ callId: incoming.callId }));
      });
    }
    const callId = await first!.evaluate(async (room) => {
      const w = globalThis as unknown as ExampleWindow;
      w.roomCall = new w.calls.RoomCall(w.device);
      return w.roomCall.join({ roomId: room });
    }, roomId);
    for (const page of others) assert.equal(await page.evaluate(() => (globalThis as unknown as ExampleWindow).joined), callId);
    let stats: RoomStats[] = [];
    await until(
      async () => {
        stats = await Promise.all(pages.map(roomStatsOf));
        return stats.every((s) => s.consumers.length === 4 && s.consumers.every((c) => c.bytes > 0));
      },
      'every page to receive the other two\'s audio and video',
      30_000,
    ).catch((error: unknown) => assert.fail(`${String(error)}: ${JSON.stringify(stats)}`));
    for (const s of stats) assert.deepEqual(s.consumers.map((c) => c.kind).sort(), ['audio', 'audio', 'video', 'video']);
    return { callId, stats };
  }

  it('a room call of three pages: each receives the other two\'s audio and video; a leaver\'s media goes, the rest keep flowing, the SFU frees its transports; the last leaves and it ends', async () => {
    const { roomId, sessions, pages } = await groupOfThree();
    const [one, , three] = sessions;
    const [pageOne, pageTwo, pageThree] = pages;
    const { callId, stats: joined } = await roomCallOfThree(roomId, pages);
    let last = joined;
    // From joining to the first media byte, for bench/RESULTS.md.
    process.stderr.write(`[calls] joining a room call to its first media byte: ${last.map((s) => Math.round(s.firstByteMs ?? -1)).join(', ')} ms\n`);
    assert.equal(openTransports.size, 6, 'a send and a receive transport per page');

    // Three leaves: the others are told, close its consumers and go on receiving each other.
    await leaveOn(pageThree);
    await until(
      async () => {
        last = await Promise.all([roomStatsOf(pageOne), roomStatsOf(pageTwo)]);
        return last.every((stats) => stats.left.includes(three.deviceId) && stats.consumers.length === 2);
      },
      'the others to close the leaver\'s consumers',
      10_000,
    ).catch((error: unknown) => assert.fail(`${String(error)}: ${JSON.stringify(last)}`));
    const before = last;
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const later = await Promise.all([roomStatsOf(pageOne), roomStatsOf(pageTwo)]);
    for (const [i, stats] of later.entries()) {
      for (const consumer of stats.consumers) {
        const earlier = before[i]!.consumers.find((c) => c.producerId === consumer.producerId)!;
        assert.ok(consumer.bytes > earlier.bytes, `page ${i + 1} still receives ${consumer.kind}: ${earlier.bytes} then ${consumer.bytes} bytes`);
      }
    }
    assert.equal(openTransports.size, 4, 'the SFU closed the leaver\'s transports');
    assert.equal(await pageThree.evaluate(() => (globalThis as unknown as ExampleWindow).device.events.filter((e) => e.event === 'room-call.left').length), 0, 'the leaver is not told it left');

    // The last two leave: the call ends, and the SFU holds nothing of it.
    await leaveOn(pageOne);
    await leaveOn(pageTwo);
    const ended = (await api(one, 'GET', `/api/calls/${callId}`)).json();
    assert.equal(ended.state, 'ENDED');
    assert.equal(ended.endReason, 'HANGUP');
    await until(() => openTransports.size === 0, 'the SFU to close every transport of the call', 5_000);
    await pageOne.evaluate(() => (globalThis as unknown as ExampleWindow).device.next('room-call.ended'));
  });

  it('the production image\'s worker (bundled as the Dockerfile does, on Debian 13\'s C library and OpenSSL 3.5) carries a room call of three pages', async () => {
    const { productionWorker } = (await import(pathToFileURL(path.join(root, 'scripts/mediasoup-worker.mjs')).href)) as { productionWorker(binary: string, dest: string): string };
    const worker = productionWorker(process.env.MEDIASOUP_WORKER_BIN!, path.join(process.env.TEST_TMP ?? os.tmpdir(), `production-worker-${process.pid}`));
    const loads = execFileSync(worker, [], { env: { LD_TRACE_LOADED_OBJECTS: '1' }, encoding: 'utf8' });
    assert.match(loads, /libssl\.so\.3 => \S*runtime-libs-trixie-openssl\S*libssl\.so\.3/, `Debian 13's OpenSSL: ${loads}`);
    // The only media node for this test: an sfu process running that worker.
    await sfu.close();
    const node = await spawnRole('sfu', t.config, { MEDIASOUP_WORKER_BIN: worker, SFU_CONTROL_PORT: '0', SFU_RTC_MIN_PORT: '42500', SFU_RTC_MAX_PORT: '42599' }, (output) => output.includes('sfu node started'));
    try {
      const { roomId, sessions, pages } = await groupOfThree();
      const { callId } = await roomCallOfThree(roomId, pages);
      for (const page of pages) await leaveOn(page);
      assert.equal((await api(sessions[0], 'GET', `/api/calls/${callId}`)).json().endReason, 'HANGUP', `the worker lived through the call: ${node.output().slice(-2000)}`);
    } finally {
      await node.kill();
      sfu = await startSfuNode(t.ctx.platform, { port: 0 });
    }
  });
});
