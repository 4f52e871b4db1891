import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { copyFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { freshPhone, lastCode, signIn, startTestApp, startTestWorkers, type Session, type TestApp } from '../helpers/app.js';
import { connectAll, makeRoom, postMessage } from '../helpers/factories.js';
import { totp } from '../helpers/totp.js';
import { projectRoot } from '../helpers/files.js';
import { holdsSockets, spawnHub, type HubProcess } from '../helpers/hubs.js';
import { startFront, type Front } from '../helpers/nginx.js';
import { installClientLibrary } from '../helpers/packages.js';
import { ownRedis } from '../helpers/private-stack.js';
import { until } from '../helpers/wait.js';
import type { Workers } from '../../workers/main.js';

const exec = promisify(execFile);

/** What these tests use of the installed library (its own types are for browsers: no Node lib here). */
interface Store {
  get(key: string): Promise<string | null>;
}
type Call = (path: string, init?: object) => Promise<{ data?: unknown; response: Response }>;
interface Client {
  readonly state: string;
  readonly calls: { watchIceServers(handler: (servers: never) => void): () => void; signal(signal: object): Promise<void> };
  confirmTwoFactor(code: string): Promise<string>;
  restore(): Promise<boolean>;
  readonly userId: string | null;
  readonly deviceId: string | null;
  readonly lastSeq: number;
  readonly api: { GET: Call; POST: Call; PUT: Call };
  on(event: string, handler: (payload: never) => unknown): () => void;
  connect(): void;
  disconnect(): Promise<void>;
  close(): Promise<void>;
  requestCode(phone: string): Promise<void>;
  signIn(phone: string, code: string): Promise<string>;
  openRoom(roomId: string): Promise<{ id: string; message: string }[]>;
  send(roomId: string, text: string): { clientMessageId: string; messageId: Promise<string> };
}
interface Library {
  createChatClient(options: object): Promise<Client>;
  memoryStore(): Store;
  storageStore(storage: object): Store;
}
interface Envelope {
  seq: number;
  data: { customMessage?: string; reason?: string };
}

/** A phone running the library: signed in with the texted code, every event it got recorded. */
class Phone {
  readonly events: { name: string; seq: number; text: string }[] = [];
  readonly messages: { id: string; message: string }[] = [];
  readonly states: string[] = [];
  readonly resyncs: { scope: string; reason: string; rooms: string[] }[] = [];
  chatLists = 0;
  constructor(
    readonly client: Client,
    readonly store: Store,
  ) {
    client.on('state', (state: string) => void this.states.push(state));
    client.on('message.new', (message: { id: string; message: string }) => void this.messages.push(message));
    for (const name of ['contact.request', 'inbox.resync-required']) client.on(name, (envelope: Envelope) => void this.events.push({ name, seq: envelope.seq, text: envelope.data.customMessage ?? envelope.data.reason ?? '' }));
    client.on('resync', (resync: { scope: string; reason: string; rooms: string[] }) => void this.resyncs.push(resync));
    client.on('chats', () => void this.chatLists++);
  }

  get session(): Promise<Session> {
    return this.store.get('chat:session').then((text) => JSON.parse(text!) as Session);
  }

  connected(ms = 15_000): Promise<void> {
    return until(() => this.client.state === 'connected', 'the phone connected and caught up', ms);
  }
}

async function phoneOn(lib: Library, t: TestApp, baseUrl: string, socketUrl = baseUrl, fetch?: (request: Request) => Promise<Response>): Promise<Phone> {
  const store = lib.memoryStore();
  const client = await lib.createChatClient({ baseUrl, socketUrl, store, device: { name: 'Library phone', platform: 'ANDROID' }, ...(fetch ? { fetch } : {}) });
  const phone = freshPhone();
  await client.requestCode(phone);
  assert.equal(await client.signIn(phone, await lastCode(t.outbox, phone)), 'signed-in');
  return new Phone(client, store);
}

/** A device event to the phone, as the services send them. */
function contactRequest(t: TestApp, deviceId: string, text: string): Promise<unknown> {
  return t.ctx.events.toDevice(deviceId, 'contact.request', { requestId: text, sender: { id: 'u-sender', deleted: false, displayName: null, avatarUrl: null, avatarThumbnailUrl: null }, customMessage: text });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const consecutive = (seqs: number[]) => seqs.every((seq, i) => i === 0 || seq === seqs[i - 1]! + 1);
/** Generous per-address sign-in limits: every phone here signs in from 127.0.0.1. */
const SIGN_IN = { SIGNIN_CODES_PER_ADDRESS: '1000', SIGNIN_CODES_PER_NETWORK: '1000', SIGNIN_ATTEMPTS_PER_ADDRESS: '1000', SIGNIN_ATTEMPTS_PER_NETWORK: '1000' };

describe('the client library, installed from its tarball, against two hubs behind nginx', () => {
  let work: string;
  let lib: Library;
  let redis: Awaited<ReturnType<typeof ownRedis>>;
  let t: TestApp;
  let workers: Workers;
  let hubs: HubProcess[] = [];
  let front: Front;
  let apiUrl: string;
  const phones: Phone[] = [];
  const env = { DEPENDENCY_TIMEOUT_MS: '1500', DEPENDENCY_PROBE_MS: '300' };

  before(async () => {
    work = await mkdtemp(path.join(os.tmpdir(), 'client-library-'));
    redis = await ownRedis({ persistent: true });
    // TURN credentials of 62 s: the library fetches them again (a minute before they expire) within the test.
    t = await startTestApp({ ...env, ...SIGN_IN, REDIS_URL: redis.url, INBOX_MAX_EVENTS: '20', TURN_CREDENTIAL_TTL: '62', TURN_URLS: 'turn:127.0.0.1:3478' });
    await t.app.listen({ host: '127.0.0.1', port: 0 });
    const address = t.app.server.address();
    apiUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
    [lib, workers, ...hubs] = await Promise.all([installClientLibrary<Library>(work), startTestWorkers(t), spawnHub(t.config, env), spawnHub(t.config, env)]);
    // The front's two api servers are this one api (it is in this process, to post and to look at what it stored).
    const apiPort = Number(new URL(apiUrl).port);
    front = await startFront({ api: [apiPort, apiPort], hubs: hubs.map((hub) => hub.port) });
  });
  after(async () => {
    await Promise.all(phones.map((phone) => phone.client.close()));
    await front?.stop();
    await Promise.all(hubs.map((hub) => hub.kill('SIGKILL')));
    await workers?.close();
    await t?.close();
    await redis?.stop();
    await rm(work, { recursive: true, force: true });
  });

  async function phone(fetch?: (request: Request) => Promise<Response>, baseUrl = front.url): Promise<Phone> {
    const made = await phoneOn(lib, t, baseUrl, front.url, fetch);
    phones.push(made);
    return made;
  }
  /** A phone connected and caught up, with a room it shows (open) and a member who posts there over REST. */
  async function phoneInOpenRoom(): Promise<{ p: Phone; poster: Session; roomId: string }> {
    const p = await phone();
    const { poster, roomId } = await roomWith(p);
    p.client.connect();
    await p.connected();
    await p.client.openRoom(roomId);
    return { p, poster, roomId };
  }
  /** A member of the phone's room who posts over REST. */
  async function roomWith(p: Phone): Promise<{ poster: Session; roomId: string }> {
    const poster = await signIn(t);
    const room = await makeRoom(t, poster, { members: [await p.session] });
    return { poster, roomId: room.id };
  }

  it('runs examples/sdk-chat.mjs: two people sign in from the SMS outbox and every message arrives exactly once', async () => {
    await copyFile(path.join(projectRoot, 'examples', 'sdk-chat.mjs'), path.join(work, 'sdk-chat.mjs'));
    const { stdout } = await exec(process.execPath, [path.join(work, 'sdk-chat.mjs')], { cwd: work, env: { ...process.env, BASE_URL: front.url, SOCKET_URL: front.url, SMS_OUTBOX_FILE: t.outbox }, timeout: 60_000 });
    assert.equal(stdout.trim(), 'delivered');
  });

  it('runs the README\'s quick start as written: signs in with the code typed in, opens a room, sends and reacts', async () => {
    const readme = await readFile(path.join(projectRoot, 'packages', 'client', 'README.md'), 'utf8');
    const script = /## Quick start[\s\S]*?```js\n([\s\S]*?)```/.exec(readme)?.[1];
    assert.ok(script, 'the README has a quick start');
    await writeFile(path.join(work, 'quickstart.mjs'), script);
    const number = freshPhone();
    // Laid out as under npm start: the api and a hub, each at its own address.
    const child = spawn(process.execPath, ['quickstart.mjs'], { cwd: work, env: { ...process.env, BASE_URL: apiUrl, SOCKET_URL: `http://127.0.0.1:${hubs[1]!.port}`, PHONE: number }, stdio: ['pipe', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    try {
      await until(() => output.includes('Code: '), 'the quick start asks for the code', 10_000);
      child.stdin.end(`${await lastCode(t.outbox, number)}\n`);
      assert.equal(await exited, 0, output);
    } finally {
      child.kill('SIGKILL');
    }
    const id = /sent (\S+) and reacted to it/.exec(output)?.[1];
    assert.ok(id, output);
    const stored = (await t.db.collection('messages').findOne({ _id: id as never })) as unknown as { message: string; userId: string; reactions: Record<string, string[]> };
    assert.equal(stored.message, 'Hello!');
    assert.deepEqual(stored.reactions[stored.userId], ['👍']);
    assert.match(output, /message from \S+: Hello!/);
    assert.match(output, /connection: connected/);
    assert.doesNotMatch(output, /connect: /, 'no connection attempt failed');
  });

  it('signs in with two-factor, fetches ICE servers again before they expire, and relays call signals over the socket', async () => {
    const [caller, callee] = await Promise.all([phone(), phone()]);
    // Two-factor on for the caller's account: a second sign-in of the number needs the authenticator's code.
    const { secret } = (await (await caller.client.api.POST('/api/users/2fa/setup')).data) as { secret: string };
    assert.equal((await caller.client.api.POST('/api/users/2fa/enable', { params: { query: { code: totp(secret) } } })).response.status, 200);
    const second = await lib.createChatClient({ baseUrl: front.url, store: lib.memoryStore(), device: { name: 'Second phone', platform: 'WEB' } });
    const number = ((await t.db.collection('users').findOne({ _id: caller.client.userId as never })) as unknown as { phone: string }).phone;
    await second.requestCode(number);
    assert.equal(await second.signIn(number, await lastCode(t.outbox, number)), 'two-factor-required');
    assert.equal(second.state, 'signed-out');
    assert.equal(await second.confirmTwoFactor(totp(secret, Date.now() + 30_000)), 'signed-in');
    assert.equal(second.userId, caller.client.userId);
    assert.notEqual(second.deviceId, caller.client.deviceId);
    await second.close();

    const seen: string[] = [];
    const stop = caller.client.calls.watchIceServers((servers: { expiresAt: string; iceServers: { username?: string }[] }) => void seen.push(servers.iceServers.find((server) => server.username)!.username!));
    await until(() => seen.length >= 2, 'ICE servers fetched again before they expire', 10_000);
    stop();
    assert.notEqual(seen[0], seen[1], 'new TURN credentials');

    await connectAll(t, await caller.session, [await callee.session]);
    caller.client.connect();
    callee.client.connect();
    await Promise.all([caller.connected(), callee.connected()]);
    const rang = new Promise<{ data: { callId: string } }>((resolve) => callee.client.on('call.incoming', resolve));
    const signals: { kind: string; payload: unknown }[] = [];
    callee.client.on('call.signal', ({ data }: { data: { kind: string; payload: unknown } }) => void signals.push(data));
    const { id: callId } = (await caller.client.api.POST('/api/calls', { body: { calleeId: callee.client.userId, media: 'AUDIO' } })).data as { id: string };
    assert.equal((await rang).data.callId, callId);
    assert.equal((await callee.client.api.POST('/api/calls/{callId}/answer', { params: { path: { callId } } })).response.status, 200);
    const offer = { type: 'offer', sdp: 'v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\n' };
    await caller.client.calls.signal({ callId, kind: 'offer', payload: offer });
    await until(() => signals.length === 1, 'the offer reached the callee', 5_000);
    assert.deepEqual(signals[0], { callId, fromDeviceId: caller.client.deviceId, kind: 'offer', payload: offer });
    await caller.client.calls.signal({ callId, kind: 'offer', payload: { type: 'answer', sdp: 'v=0' } }).then(
      () => assert.fail('a mismatched signal is refused'),
      (error: { name: string; status: number; code: string }) => assert.deepEqual([error.name, error.status, error.code], ['ApiError', 400, 'VALIDATION_FAILED']),
    );
  });

  it('a phone offline for a while catches up exactly what it missed: device events from its inbox, messages of its open room over REST', async () => {
    const { p, poster, roomId } = await phoneInOpenRoom();
    assert.deepEqual(p.states.slice(0, 3), ['connecting', 'catching-up', 'connected']);
    await postMessage(t, poster, roomId, 'before');
    await contactRequest(t, p.client.deviceId!, 'event before');
    await until(() => p.messages.length === 1 && p.events.length === 1, 'the live message and event', 5_000);

    await p.client.disconnect();
    assert.equal(p.client.state, 'offline');
    const missed = [];
    for (let i = 0; i < 3; i++) missed.push(await postMessage(t, poster, roomId, `missed ${i}`));
    for (let i = 0; i < 2; i++) await contactRequest(t, p.client.deviceId!, `event missed ${i}`);
    p.client.connect();
    await p.connected();
    await sleep(300);
    assert.deepEqual(p.messages.map((m) => m.message), ['before', 'missed 0', 'missed 1', 'missed 2']);
    assert.deepEqual(p.messages.slice(1).map((m) => m.id), missed);
    assert.deepEqual(p.events.map((e) => e.text), ['event before', 'event missed 0', 'event missed 1']);
    assert.ok(consecutive(p.events.map((e) => e.seq)));
    assert.equal(p.client.lastSeq, p.events.at(-1)!.seq);
    assert.ok(p.chatLists >= 2, 'the chat list was fetched again after the reconnection');
  });

  it('a phone whose stored position is behind what its inbox still holds (all acknowledged) is caught up at once, not after a wait', async () => {
    const p = await phone();
    p.client.connect();
    await p.connected();
    for (let i = 0; i < 2; i++) await contactRequest(t, p.client.deviceId!, `handled ${i}`);
    await until(() => p.events.length === 2, 'both events', 5_000);
    await p.client.disconnect();
    // The same session with a store that lost its position (the app's storage was cleared, say): lastSeq 0.
    const store = lib.memoryStore() as Store & { set(key: string, value: string): Promise<void> };
    await store.set('chat:session', JSON.stringify(await p.session));
    const again = await lib.createChatClient({ baseUrl: front.url, store });
    phones.push(new Phone(again, store));
    again.connect();
    // Well before the library's 30-second limit on waiting for the inbox.
    await until(() => again.state === 'connected', 'connected and caught up', 10_000);
    assert.deepEqual(p.events.map((e) => e.text), ['handled 0', 'handled 1']);
  });

  it('a message that arrives live while the missed ones are being fetched does not hide them', async () => {
    // The phone's fetch of the first open room's missed messages is slow (a bad network): meanwhile a
    // live message in the second room comes before that room's missed one is fetched.
    let slowRoom: string | null = null;
    let slowStarted = false;
    const delayed = async (request: Request) => {
      if (slowRoom && request.url.includes(`/api/messages/${slowRoom}?`) && request.url.includes('after=')) {
        slowStarted = true;
        await sleep(800);
      }
      return fetch(request);
    };
    const p = await phone(delayed);
    const [first, second] = [await roomWith(p), await roomWith(p)];
    p.client.connect();
    await p.connected();
    await p.client.openRoom(first.roomId);
    await p.client.openRoom(second.roomId);
    for (const room of [first, second]) await postMessage(t, room.poster, room.roomId, 'seen');
    await until(() => p.messages.length === 2, 'the first messages', 5_000);
    await p.client.disconnect();
    const missed = await postMessage(t, second.poster, second.roomId, 'missed');
    slowRoom = first.roomId;
    p.client.connect();
    await until(() => slowStarted, 'the slow fetch started', 10_000);
    const live = await postMessage(t, second.poster, second.roomId, 'live');
    await p.connected();
    await until(() => p.messages.length >= 4, 'the missed message too', 5_000).catch((error: Error) => {
      throw new Error(`${error.message}: got ${p.messages.map((m) => m.message).join(', ')}`);
    });
    const ids = p.messages.map((m) => m.id);
    assert.ok(ids.includes(missed) && ids.includes(live));
    assert.equal(new Set(ids).size, 4);
  });

  it('a post whose answer was lost is sent again and appears once; the queue waits while the service cannot be reached and sends in order when it can', async () => {
    let mode: 'drop-answer' | 'pass' | 'down' = 'pass';
    const puts: string[] = [];
    const proxy = http.createServer((req, res) => {
      if (mode === 'down') return void req.socket.destroy();
      const upstream = http.request(`${apiUrl}${req.url}`, { method: req.method, headers: req.headers }, (answer) => {
        const isPost = req.method === 'PUT' && req.url!.startsWith('/api/messages/');
        if (isPost) puts.push(String(req.headers['idempotency-key']));
        if (isPost && mode === 'drop-answer') {
          // The service stored the message and answered; the answer never reaches the phone.
          mode = 'pass';
          answer.resume();
          answer.on('end', () => req.socket.destroy());
          return;
        }
        res.writeHead(answer.statusCode!, answer.headers);
        answer.pipe(res);
      });
      req.pipe(upstream);
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    try {
      const proxyUrl = `http://127.0.0.1:${(proxy.address() as { port: number }).port}`;
      const p = await phone(undefined, proxyUrl);
      const { roomId } = await roomWith(p);
      mode = 'drop-answer';
      const first = p.client.send(roomId, 'sent twice, stored once');
      const id = await first.messageId;
      assert.equal(puts.length, 2, 'the post was sent again after its answer was lost');
      assert.equal(puts[0], puts[1], 'with the same Idempotency-Key');
      const stored = await t.db.collection('messages').find({ roomId, message: 'sent twice, stored once' }).toArray();
      assert.deepEqual(stored.map((m) => m._id), [id]);

      mode = 'down';
      const queued = ['one', 'two', 'three'].map((text) => p.client.send(roomId, `offline ${text}`));
      await sleep(2_500);
      assert.equal(await t.db.collection('messages').countDocuments({ roomId, message: /^offline/ }), 0);
      mode = 'pass';
      const ids = await Promise.all(queued.map((q) => q.messageId));
      const after = await t.db.collection('messages').find({ roomId, message: /^offline/ }).sort({ createdAt: 1 }).toArray();
      assert.deepEqual(after.map((m) => m.message), ['offline one', 'offline two', 'offline three']);
      assert.deepEqual(after.map((m) => m._id), ids);
    } finally {
      proxy.closeAllConnections();
      await new Promise((resolve) => proxy.close(resolve));
    }
  });

  it('keeps its session and unsent messages in a React Native-style storage: an app closed offline sends them when it opens again', async () => {
    // What AsyncStorage offers: promises of strings, by key.
    const saved = new Map<string, string>();
    const asyncStorage = {
      getItem: async (key: string) => saved.get(key) ?? null,
      setItem: async (key: string, value: string) => void saved.set(key, value),
      removeItem: async (key: string) => void saved.delete(key),
    };
    const p = await phone();
    const { roomId } = await roomWith(p);
    const session = await p.session;
    // The same account in an app whose network is down for posting.
    const down = (request: Request) => (request.url.includes('/api/messages/') ? Promise.reject(new TypeError('network is down')) : fetch(request));
    const first = await lib.createChatClient({ baseUrl: front.url, store: lib.storageStore(asyncStorage), fetch: down, retries: 1 });
    assert.equal(first.state, 'signed-out');
    await asyncStorage.setItem('chat-platform:chat:session', JSON.stringify({ ...session, accessExpiresAt: Date.now() + 600_000 }));
    assert.equal(await first.restore(), true);
    const queued = ['one', 'two'].map((text) => first.send(roomId, `closed ${text}`));
    await until(() => saved.has('chat-platform:chat:outbox'), 'the queue was written to the storage');
    await sleep(1_500);
    await first.close();
    assert.equal(await t.db.collection('messages').countDocuments({ roomId, message: /^closed/ }), 0);
    void queued;

    // The app opens again, online: the queue comes back from the storage and goes out, in order, once.
    const again = await lib.createChatClient({ baseUrl: front.url, store: lib.storageStore(asyncStorage) });
    const sent: string[] = [];
    again.on('sent', ({ messageId }: { messageId: string }) => void sent.push(messageId));
    await until(() => sent.length === 2, 'the queued messages were sent after the app opened again', 15_000);
    const stored = await t.db.collection('messages').find({ roomId, message: /^closed/ }).sort({ createdAt: 1 }).toArray();
    assert.deepEqual(stored.map((m) => m.message), ['closed one', 'closed two']);
    assert.deepEqual(stored.map((m) => m._id), sent);
    assert.equal(saved.has('chat-platform:chat:outbox'), false);
    await again.close();
  });

  it('a phone past the inbox bound is told to resync once, refetches the chat list, and continues from the inbox\'s end', async () => {
    const p = await phone();
    p.client.connect();
    await p.connected();
    await p.client.disconnect();
    for (let i = 0; i < 25; i++) await contactRequest(t, p.client.deviceId!, `flood ${i}`);
    const lists = p.chatLists;
    p.client.connect();
    await p.connected();
    assert.deepEqual(p.events.map((e) => [e.name, e.text]), [['inbox.resync-required', 'INBOX_BOUND']]);
    assert.deepEqual(p.resyncs.map((r) => [r.scope, r.reason]), [['inbox', 'INBOX_BOUND']]);
    assert.ok(p.chatLists > lists);
    const head = (await t.ctx.services.inbox.state(p.client.deviceId!)).seq;
    assert.equal(p.client.lastSeq, head);
    await contactRequest(t, p.client.deviceId!, 'after the resync');
    await until(() => p.events.length === 2, 'the next event', 5_000);
    assert.deepEqual(p.events[1], { name: 'contact.request', seq: head + 1, text: 'after the resync' });
  });

  it('Redis restarted: the app is told to resync its open room, the library refetches, and what was sent meanwhile is stored once', async () => {
    const { p, poster, roomId } = await phoneInOpenRoom();
    await redis.shutdown();
    const during = p.client.send(roomId, 'written while Redis was away');
    await sleep(1_000);
    redis = await ownRedis({ persistent: true, port: redis.port, dir: redis.dir });
    await until(() => p.resyncs.some((r) => r.scope === 'rooms'), 'rooms.resync-required reached the app', 20_000);
    assert.deepEqual(p.resyncs.find((r) => r.scope === 'rooms'), { scope: 'rooms', reason: 'BROADCASTS_LAPSED', rooms: [roomId], refetch: [] });
    const id = await during.messageId;
    assert.equal(await t.db.collection('messages').countDocuments({ roomId, message: 'written while Redis was away' }), 1);
    await p.connected();
    const live = await postMessage(t, poster, roomId, 'after the restart');
    await until(() => p.messages.some((m) => m.id === live), 'a live message after the restart', 10_000);
    assert.equal(new Set(p.messages.map((m) => m.id)).size, p.messages.length, 'no message twice');
    assert.ok(id);
  });

  it('a hub killed mid-conversation: the phone reconnects through nginx to the other one and misses nothing, repeats nothing', async () => {
    const { p, poster, roomId } = await phoneInOpenRoom();
    const victim = (await Promise.all(hubs.map(holdsSockets))).indexOf(true);
    assert.ok(victim >= 0, 'a hub holds the phone');
    const posted: string[] = [];
    for (let i = 0; i < 24; i++) {
      posted.push(await postMessage(t, poster, roomId, `m${i}`));
      if (i % 3 === 0) await contactRequest(t, p.client.deviceId!, `e${i}`);
      if (i === 8) await hubs[victim]!.kill('SIGKILL');
      await sleep(40);
    }
    await until(() => p.messages.length >= posted.length && p.events.length >= 8, 'every message and event after the reconnection', 20_000).catch((error: Error) => {
      const got = new Set(p.messages.map((m) => m.message));
      throw new Error(`${error.message}: missing ${posted.length - p.messages.length} messages (${posted.map((_, i) => `m${i}`).filter((m) => !got.has(m)).join(' ')}), events ${p.events.map((e) => e.text).join(' ')}; states ${p.states.join(' → ')}`);
    });
    await p.connected();
    await sleep(500);
    assert.deepEqual(
      p.messages.map((m) => m.id).sort(),
      [...posted].sort(),
      'every message once',
    );
    assert.deepEqual(p.events.map((e) => e.text), ['e0', 'e3', 'e6', 'e9', 'e12', 'e15', 'e18', 'e21']);
    assert.ok(consecutive(p.events.map((e) => e.seq)));
    assert.ok(p.states.filter((s) => s === 'connected').length >= 2, `it reconnected: ${p.states.join(' → ')}`);
  });
});

describe('the client library keeps the session', () => {
  let work: string;
  let lib: Library;
  let t: TestApp;
  let hub: HubProcess;
  let apiUrl: string;
  let p: Phone | undefined;

  before(async () => {
    work = await mkdtemp(path.join(os.tmpdir(), 'client-session-'));
    // Access tokens of 3 seconds: a session of a few seconds outlives several.
    t = await startTestApp({ ...SIGN_IN, ACCESS_TOKEN_TTL: '3' });
    await t.app.listen({ host: '127.0.0.1', port: 0 });
    const address = t.app.server.address();
    apiUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
    [lib, hub] = await Promise.all([installClientLibrary<Library>(work), spawnHub(t.config)]);
  });
  after(async () => {
    await p?.client.close();
    await hub?.kill('SIGKILL');
    await t?.close();
    await rm(work, { recursive: true, force: true });
  });

  it('two clients on one store (two tabs of a browser) share the session: their refreshes never present a spent token', async () => {
    const tab = await phoneOn(lib, t, apiUrl, `http://127.0.0.1:${hub.port}`);
    const other = await lib.createChatClient({ baseUrl: apiUrl, socketUrl: `http://127.0.0.1:${hub.port}`, store: tab.store });
    assert.equal(other.userId, tab.client.userId);
    const signedOut: string[] = [];
    for (const client of [tab.client, other]) client.on('signed-out', ({ reason }: { reason: string }) => void signedOut.push(reason));
    tab.client.connect();
    other.connect();
    try {
      // Tokens of 3 seconds: both tabs refresh, at about the same moments, several times.
      for (let i = 0; i < 8; i++) {
        const answers = await Promise.all([tab.client.api.GET('/api/users/me'), other.api.GET('/api/users/me')]);
        assert.deepEqual(answers.map((a) => a.response.status), [200, 200]);
        await sleep(1_000);
      }
      assert.deepEqual(signedOut, []);
      assert.deepEqual([tab.client.state, other.state], ['connected', 'connected']);
    } finally {
      await Promise.all([tab.client.close(), other.close()]);
    }
  });

  it('refreshes the access token as it expires, without the app noticing, and ends the session when its refresh token is reused', async () => {
    p = await phoneOn(lib, t, apiUrl, `http://127.0.0.1:${hub.port}`);
    p.client.connect();
    await p.connected();
    const tokens = new Set<string>();
    for (let i = 0; i < 8; i++) {
      const me = await p.client.api.GET('/api/users/me');
      assert.equal(me.response.status, 200);
      tokens.add((await p.session).accessToken);
      // Half way, the socket connects again: its handshake needs a token the first one has outlived.
      if (i === 4) {
        await p.client.disconnect();
        p.client.connect();
        await p.connected();
      }
      await sleep(1_000);
    }
    assert.ok(tokens.size >= 3, `the token was refreshed (${tokens.size} tokens in 8 s)`);
    assert.ok(!p.states.includes('signed-out'));

    // Someone else presents the phone's refresh token first (a leak): the phone's next refresh is a reuse.
    const signedOut = new Promise<{ reason: string }>((resolve) => p!.client.on('signed-out', resolve));
    const stolen = await fetch(`${apiUrl}/api/auth/refresh`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ refreshToken: (await p.session).refreshToken }) });
    assert.equal(stolen.status, 200);
    await sleep(3_000);
    await p.client.api.GET('/api/users/me').then(
      () => assert.fail('the call should not succeed'),
      (error: Error) => assert.equal(error.name, 'SignedOutError'),
    );
    assert.deepEqual(await signedOut, { reason: 'REFRESH_TOKEN_REUSED' });
    assert.equal(p.client.state, 'signed-out');
    assert.equal(await p.store.get('chat:session'), null);
    // Signed out, a message is refused at once, not queued for ever.
    const { messageId } = p.client.send('any-room', 'after signing out');
    await messageId.then(
      () => assert.fail('sent without a session'),
      (error: Error) => assert.equal(error.name, 'SignedOutError'),
    );
  });
});
