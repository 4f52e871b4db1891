import createClient, { type Client } from 'openapi-fetch';
import { io, type ManagerOptions, type Socket, type SocketOptions } from 'socket.io-client';
import { Emitter, type Handler } from './emitter.js';
import { ApiError, OfflineError, SignedOutError } from './errors.js';
import type { components, paths } from './generated/api.js';
import { DEVICE_EVENT_NAMES, ROOM_EVENT_NAMES, type ClientAcks, type ClientEvents, type DeviceEvents, type HubEvents, type RoomEvents } from './generated/events.js';
import { sessionFetch } from './http.js';
import { InboxReader, type Envelope } from './inbox.js';
import { SendQueue, type QueuedMessage } from './outbox.js';
import { Session, type SessionTokens, type TokenAnswer } from './session.js';
import { memoryStore, type KeyValueStore } from './store.js';
import { backoff, uuid } from './util.js';

export type Schemas = components['schemas'];
export type Message = Schemas['MessageDto'];
export type RoomStatus = Schemas['RoomStatus'];
/** What a post may carry besides its text (the body of PUT /api/messages/{roomId}). */
export type MessageOptions = Omit<Schemas['ChatMessage'], 'roomId' | 'message' | 'clientMessageId'>;
export type IceServers = Schemas['IceServers'];

/**
 * Where the connection stands: `signed-out` (no session), `offline` (signed in, no socket: not asked to
 * connect, or waiting to try again), `connecting`, `catching-up` (connected; the missed device events,
 * the open rooms' missed messages and the chat list are being fetched), `connected` (caught up, live).
 */
export type ConnectionState = 'signed-out' | 'offline' | 'connecting' | 'catching-up' | 'connected';

/** Device state the inbox carries news of: what an app refetches after `inbox.resync-required` (the chat list is refetched for it). */
export const INBOX_STATE = ['contact requests', 'room invitations', 'calls', 'wallets', 'end-to-end keys', 'devices', 'exports', 'notification levels'] as const;

/** Some events may have been missed: what the library refetched and what the app should. */
export interface Resync {
  /** `inbox`: device events were dropped (INBOX_BOUND) or the inbox was reset (INBOX_RESET); `rooms`: room broadcasts lapsed (BROADCASTS_LAPSED). */
  scope: 'inbox' | 'rooms';
  reason: string;
  /** Open rooms whose missed messages the library fetched and delivered as `message.new`. */
  rooms: string[];
  /** What the app should refetch over REST itself (empty for `rooms`: nothing else is missing). */
  refetch: readonly string[];
}

/** The library's own events, beside the service's. */
export interface LibraryEvents {
  state: ConnectionState;
  resync: Resync;
  /** The chat list, fetched anew (after every connection and resync). */
  chats: RoomStatus[];
  /** A queued message was stored: its id. */
  sent: { clientMessageId: string; roomId: string; messageId: string };
  /** A queued message was refused (or the session ended before it went). */
  'send-failed': { clientMessageId: string; roomId: string; error: ApiError | SignedOutError };
  'signed-out': { reason: string };
  /** A handler threw, a background fetch failed, or a connection attempt failed (`event: 'connect'`: the library tries again). */
  error: { error: unknown; event: string };
}

/** Every event the client emits, by name: device events as their envelope `{seq, at, data}`, room broadcasts and hub notices as sent. */
export type ChatEvents = DeviceEvents & RoomEvents & HubEvents & LibraryEvents;

export interface ChatClientOptions {
  /** The service's base address (`https://chat.example.com`): REST under `/api`. */
  baseUrl: string;
  /** The socket's address, when not `baseUrl`: a hub directly (under `npm start`, `http://127.0.0.1:8081`); behind the production front, the same as `baseUrl`. */
  socketUrl?: string;
  /** Where the session, inbox position and send queue are kept; in memory by default. */
  store?: KeyValueStore;
  /** Prefix of the store's keys (one per account when an app keeps several). */
  storeKey?: string;
  /** This device as a sign-in registers it. */
  device?: { name: string; platform: 'IOS' | 'ANDROID' | 'WEB' | 'DESKTOP' | 'OTHER' };
  /** Another fetch (tests, proxies); the global one by default. */
  fetch?: (request: Request) => Promise<Response>;
  /** Each REST attempt's limit (ms), 15,000 by default. */
  requestTimeoutMs?: number;
  /** Retries of a REST call that is safe to repeat, 4 by default. */
  retries?: number;
  /** The socket's reconnection backoff (with jitter): 500 ms doubling up to 10 s by default. */
  reconnectDelayMs?: number;
  reconnectDelayMaxMs?: number;
  /** Passed to socket.io-client as they are (extra headers, a custom agent in Node). */
  socketOptions?: Partial<ManagerOptions & SocketOptions>;
}

interface OpenRoom {
  newest: { id: string; createdAt: string } | null;
}

/** Ids of recent messages: a message that arrives twice (live and refetched) is delivered once. */
class RecentIds {
  private readonly ids = new Set<string>();
  constructor(private readonly size: number) {}
  /** True when the id is new (and remembers it). */
  add(id: string): boolean {
    if (this.ids.has(id)) return false;
    this.ids.add(id);
    if (this.ids.size > this.size) this.ids.delete(this.ids.values().next().value!);
    return true;
  }
  clear(): void {
    this.ids.clear();
  }
}

const TYPING_INTERVAL_MS = 2_000;
const ACK_TIMEOUT_MS = 10_000;
const CATCH_UP_LIMIT_MS = 30_000;
const PAGE = 100;

/** Resolves a REST call's data, which is there whenever the call resolves (refusals throw {@link ApiError}). */
export async function ok<R extends { data?: unknown }>(call: Promise<R>): Promise<NonNullable<R['data']>> {
  const { data } = await call;
  // Cast: the client's fetch throws on every refusal, so a call that resolves has its data.
  return data as NonNullable<R['data']>;
}

/** Signs in, restores a stored session, and gives the client. */
export async function createChatClient(options: ChatClientOptions): Promise<ChatClient> {
  const client = new ChatClient(options);
  await client.restore();
  return client;
}

/**
 * One account on one device: its session (sign-in, tokens kept fresh), its REST client (`api`, typed
 * from the OpenAPI document), its socket (WebSocket, reconnecting with backoff and jitter), its inbox
 * (every device event once, in order, acknowledged after the app's handlers ran), the open rooms' messages
 * (missed ones fetched after every reconnection or lapse) and its send queue (each message once).
 */
export class ChatClient {
  /** The REST API, typed by the served OpenAPI document; refusals throw {@link ApiError}. */
  readonly api: Client<paths>;
  readonly calls: {
    /** ICE servers for an RTCPeerConnection, fetched anew shortly before the TURN credentials expire. */
    iceServers: () => Promise<IceServers>;
    /** Calls `handler` with fresh ICE servers now and before each set expires (for `pc.setConfiguration` in a long call); returns a stop function. */
    watchIceServers: (handler: (servers: IceServers) => void) => () => void;
    /** Sends an SDP offer or answer, or an ICE candidate, to the other device of the call (over the socket). */
    signal: (signal: ClientEvents['call.signal']) => Promise<void>;
  };

  private readonly baseUrl: string;
  private readonly socketUrl: string;
  private readonly store: KeyValueStore;
  private readonly events: Emitter<ChatEvents>;
  private readonly session: Session;
  private readonly inbox: InboxReader;
  private readonly outbox: SendQueue;
  private readonly openRooms = new Map<string, OpenRoom>();
  private readonly recent = new RecentIds(5_000);
  private socket: Socket | null = null;
  private current: ConnectionState = 'signed-out';
  private twoFactorToken: string | null = null;
  private connection = 0;
  private retryTimer: ReturnType<typeof setTimeout> | null = null;
  private retries = 0;
  private outboxTimer: ReturnType<typeof setTimeout> | null = null;
  /** `close()` was called: no timer is set again until the app connects or sends. */
  private closed = false;
  private typingAt: { roomId: string; at: number } | null = null;
  private ice: IceServers | null = null;

  constructor(private readonly options: ChatClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.socketUrl = (options.socketUrl ?? this.baseUrl).replace(/\/+$/, '');
    this.store = options.store ?? memoryStore();
    const key = options.storeKey ?? 'chat';
    const fetchImpl = options.fetch ?? ((request: Request) => globalThis.fetch(request));
    this.events = new Emitter<ChatEvents>((error, event) => {
      if (event !== 'error') void this.events.emit('error', { error, event: String(event) });
    });
    this.session = new Session(this.store, `${key}:session`, this.baseUrl, fetchImpl, (reason) => void this.endSession(reason));
    this.api = createClient<paths>({ baseUrl: this.baseUrl, fetch: sessionFetch(this.session, fetchImpl, { timeoutMs: options.requestTimeoutMs ?? 15_000, retries: options.retries ?? 4 }) });
    this.inbox = new InboxReader(this.store, `${key}:lastSeq`, (name, envelope) => this.handleDeviceEvent(name, envelope), (seq) => this.socket?.emit('inbox.ack', { seq }));
    this.outbox = new SendQueue(
      this.store,
      `${key}:outbox`,
      (item) => this.post(item),
      (item, messageId) => this.events.emit('sent', { clientMessageId: item.clientMessageId, roomId: item.roomId, messageId }),
      (item, error) => this.events.emit('send-failed', { clientMessageId: item.clientMessageId, roomId: item.roomId, error }),
      () => this.retrySendingLater(),
    );
    this.calls = {
      iceServers: () => this.iceServers(),
      watchIceServers: (handler) => this.watchIceServers(handler),
      signal: (signal) => this.signal(signal),
    };
  }

  get state(): ConnectionState {
    return this.current;
  }

  get userId(): string | null {
    return this.session.current?.userId ?? null;
  }

  get deviceId(): string | null {
    return this.session.current?.deviceId ?? null;
  }

  /** The highest inbox `seq` the app handled (what the next connection starts after). */
  get lastSeq(): number {
    return this.inbox.handled;
  }

  /** Messages written and not yet stored by the service, oldest first. */
  get pendingMessages(): readonly QueuedMessage[] {
    return this.outbox.pending;
  }

  /** Listens for an event; returns a function that stops listening. A handler may return a promise: a device event counts as handled once it settles. */
  on<K extends keyof ChatEvents>(event: K, handler: Handler<ChatEvents[K]>): () => void {
    return this.events.on(event, handler);
  }

  /** Loads a stored session (and the inbox position and send queue, which starts sending): true when signed in. */
  async restore(): Promise<boolean> {
    const tokens = await this.session.load();
    await Promise.all([this.inbox.load(), this.outbox.load()]);
    if (tokens) {
      this.setState('offline');
      // Messages an earlier run could not send go now (REST needs no socket).
      if (this.outbox.pending.length > 0) this.outbox.kick();
    }
    return tokens !== null;
  }

  /** Texts a sign-in code to the number (E.164). */
  async requestCode(phone: string): Promise<void> {
    await this.api.POST('/api/auth/code', { body: { phone } });
  }

  /** Signs in with the texted code; `two-factor-required` asks for {@link confirmTwoFactor}. */
  async signIn(phone: string, code: string): Promise<'signed-in' | 'two-factor-required'> {
    const device = this.options.device ?? { name: 'Chat client', platform: 'OTHER' as const };
    const answer = (await ok(this.api.POST('/api/auth/login', { body: { phone, code, device } }))) as Partial<TokenAnswer> & { twoFactorRequired?: boolean; twoFactorToken?: string };
    if (answer.twoFactorRequired && answer.twoFactorToken) {
      this.twoFactorToken = answer.twoFactorToken;
      return 'two-factor-required';
    }
    await this.begin(answer as TokenAnswer);
    return 'signed-in';
  }

  /** The authenticator's code after `signIn` answered `two-factor-required`. */
  async confirmTwoFactor(code: string): Promise<'signed-in'> {
    if (!this.twoFactorToken) throw new SignedOutError('NO_TWO_FACTOR_CHALLENGE');
    const answer = (await ok(this.api.POST('/api/auth/2fa', { body: { twoFactorToken: this.twoFactorToken, code } }))) as TokenAnswer;
    this.twoFactorToken = null;
    await this.begin(answer);
    return 'signed-in';
  }

  /** Signs this device out on the service and forgets the session. */
  async signOut(): Promise<void> {
    if (this.session.current) await this.api.POST('/api/auth/logout').catch(() => undefined);
    await this.endSession('SIGNED_OUT');
  }

  /** Opens the socket and keeps it open (reconnecting) until `disconnect` or the session ends. */
  connect(): void {
    if (!this.session.current) throw new SignedOutError('NOT_SIGNED_IN');
    this.closed = false;
    if (this.socket) {
      if (!this.socket.connected && !this.socket.active) this.socket.connect();
      return;
    }
    const socket = io(this.socketUrl, {
      path: '/socket.io/',
      transports: ['websocket'],
      autoConnect: false,
      reconnectionDelay: this.options.reconnectDelayMs ?? 500,
      reconnectionDelayMax: this.options.reconnectDelayMaxMs ?? 10_000,
      randomizationFactor: 0.5,
      // Asked anew before every attempt: a fresh token, and the position the app has handled.
      auth: (reply: (auth: object) => void) => {
        this.session.accessToken().then(
          (token) => reply({ token, lastSeq: this.inbox.handled }),
          (error: unknown) => {
            if (!(error instanceof SignedOutError)) reply({ token: this.session.current?.accessToken ?? '', lastSeq: this.inbox.handled });
          },
        );
      },
      ...this.options.socketOptions,
    });
    for (const name of DEVICE_EVENT_NAMES) socket.on(name, (envelope: Envelope) => this.inbox.push(name, envelope));
    for (const name of ROOM_EVENT_NAMES) socket.on(name, (payload: unknown) => void this.onRoomEvent(name, payload));
    socket.on('rooms.resync-required', (payload: HubEvents['rooms.resync-required']) => void this.onBroadcastsLapsed(payload));
    socket.on('hub.draining', (payload: HubEvents['hub.draining']) => void this.events.emit('hub.draining', payload));
    socket.on('connect', () => void this.onConnect(socket, ++this.connection));
    socket.on('disconnect', (reason: string) => this.onDisconnect(socket, reason));
    socket.on('connect_error', (error: Error & { data?: { retryAfter?: number } }) => void this.onConnectError(socket, error));
    socket.io.on('reconnect_attempt', () => this.setState('connecting'));
    this.socket = socket;
    this.setState('connecting');
    socket.connect();
  }

  /** Closes the socket (the session stays): the handled position is written and acknowledged first. */
  async disconnect(): Promise<void> {
    this.clearRetry();
    await this.inbox.flush();
    this.dropSocket();
    this.inbox.dropPending();
    if (this.session.current) this.setState('offline');
  }

  /** Disconnects and stops every timer (the session stays in the store). */
  async close(): Promise<void> {
    this.closed = true;
    await this.disconnect();
    this.outbox.pause();
    if (this.outboxTimer) clearTimeout(this.outboxTimer);
    this.outboxTimer = null;
  }

  /** The chat list (every room, newest activity first), fetched now; also emitted as `chats`. */
  async chats(): Promise<RoomStatus[]> {
    const rooms: RoomStatus[] = [];
    for (let page = 0; ; page++) {
      const answer = await ok(this.api.GET('/api/rooms/status', { params: { query: { pageSize: 500, currentPage: page } } }));
      rooms.push(...answer.items);
      if (page + 1 >= answer.totalPages) break;
    }
    await this.events.emit('chats', rooms);
    return rooms;
  }

  /**
   * Shows a room: its newest `limit` messages (oldest first); from now on, messages the socket missed in
   * it (a reconnection, a lapse) are fetched and delivered as `message.new`, each once.
   */
  async openRoom(roomId: string, limit = 50): Promise<Message[]> {
    const page = await ok(this.api.GET('/api/messages/{roomId}', { params: { path: { roomId }, query: { limit } } }));
    const messages = byTime(page.items);
    if (!this.openRooms.has(roomId)) this.openRooms.set(roomId, { newest: null });
    for (const message of messages) {
      this.recent.add(message.id);
      this.noteNewest(message);
    }
    return messages;
  }

  closeRoom(roomId: string): void {
    this.openRooms.delete(roomId);
  }

  /**
   * Sends a message: queued (kept in the store), sent in order with its `clientMessageId` when the
   * service can be reached, retried until it is stored, and stored once however often it is sent.
   * `messageId` resolves with its id (or rejects with the refusal; `sent` and `send-failed` say the same).
   */
  send(roomId: string, message: string, options: MessageOptions = {}): { clientMessageId: string; messageId: Promise<string> } {
    const clientMessageId = uuid();
    if (!this.session.current) {
      const refused = Promise.reject(new SignedOutError('NOT_SIGNED_IN'));
      refused.catch(() => undefined);
      return { clientMessageId, messageId: refused };
    }
    const item: QueuedMessage = { clientMessageId, roomId, body: { ...options, roomId, message, clientMessageId }, queuedAt: new Date().toISOString() };
    this.closed = false;
    return { clientMessageId, messageId: this.outbox.add(item) };
  }

  /** Tells the room's other members the user is typing (at most every 2 s) or stopped; dropped while offline. */
  typing(roomId: string, typing = true): void {
    const now = Date.now();
    if (typing && this.typingAt?.roomId === roomId && now - this.typingAt.at < TYPING_INTERVAL_MS) return;
    this.typingAt = typing ? { roomId, at: now } : null;
    this.socket?.volatile.emit(typing ? 'typing.start' : 'typing.stop', { roomId });
  }

  private async begin(answer: TokenAnswer): Promise<void> {
    const previous = this.session.current;
    // A new device starts a new inbox: the old position means nothing to it.
    if (previous?.deviceId !== answer.deviceId) await this.inbox.forget();
    await this.session.start(answer);
    this.setState(this.socket ? this.current : 'offline');
    this.outbox.kick();
  }

  private async endSession(reason: string): Promise<void> {
    if (this.current === 'signed-out' && !this.session.current) return;
    this.dropSocket();
    this.clearRetry();
    await this.session.clear();
    await this.inbox.forget();
    await this.outbox.abandon(new SignedOutError(reason));
    this.openRooms.clear();
    this.recent.clear();
    this.ice = null;
    this.setState('signed-out');
    await this.events.emit('signed-out', { reason });
  }

  /** Closes the socket, deaf to it from now on (its closing fires none of the handlers). */
  private dropSocket(): void {
    const socket = this.socket;
    this.socket = null;
    socket?.removeAllListeners();
    socket?.io.removeAllListeners();
    socket?.disconnect();
  }

  private setState(state: ConnectionState): void {
    if (this.current === state) return;
    this.current = state;
    void this.events.emit('state', state);
  }

  private async onConnect(socket: Socket, connection: number): Promise<void> {
    this.retries = 0;
    this.setState('catching-up');
    this.outbox.kick();
    const start = this.inbox.handled;
    // Where each open room stood before the gap, taken now: live messages may arrive before the fetch.
    const cursors = this.roomCursors();
    try {
      const head = (await socket.timeout(ACK_TIMEOUT_MS).emitWithAck('inbox.head', {})) as ClientAcks['inbox.head'];
      // Behind the newest event the inbox holds: until it is handled (the replay brings every one). At or
      // past it: nothing to wait for (a reset inbox's resync, which comes first, is handled as it arrives).
      const inboxDone = head.seq > start ? this.inbox.reached(head.seq) : Promise.resolve();
      await Promise.all([withLimit(inboxDone, CATCH_UP_LIMIT_MS), this.catchUpRooms(cursors)]);
    } catch (error) {
      await this.events.emit('error', { error, event: 'catch-up' });
    }
    if (connection === this.connection && socket.connected && this.socket === socket) this.setState('connected');
  }

  private onDisconnect(socket: Socket, reason: string): void {
    if (this.socket !== socket) return;
    this.inbox.dropPending();
    void this.inbox.flush();
    this.setState('offline');
    // The hub closed the socket on purpose: a revoked or signed-out device (then the session check ends
    // the session), or a socket that stopped reading. Either way socket.io does not reconnect by itself.
    if (reason === 'io server disconnect') {
      void this.api.GET('/api/users/me').then(
        () => this.retryLater(socket),
        (error: unknown) => {
          if (!(error instanceof SignedOutError)) this.retryLater(socket);
        },
      );
    }
  }

  private async onConnectError(socket: Socket, error: Error & { data?: { retryAfter?: number } }): Promise<void> {
    if (this.socket !== socket) return;
    this.setState('offline');
    // Said to the app, which may show why (a hub it cannot reach, a refused token); the library tries again either way.
    void this.events.emit('error', { error, event: 'connect' });
    // A transport failure: socket.io tries again by itself, with its backoff.
    if (socket.active) return;
    if (error.message === 'UNAUTHORIZED') {
      try {
        await this.session.refresh();
      } catch (refusal) {
        if (refusal instanceof SignedOutError) return;
      }
      this.retryLater(socket);
      return;
    }
    // DATABASE_UNAVAILABLE, REDIS_UNAVAILABLE: after the time the hub gave, spread by a random half.
    const seconds = error.data?.retryAfter;
    this.retryLater(socket, seconds ? seconds * 1000 * (1 + Math.random() / 2) : undefined);
  }

  private retryLater(socket: Socket, ms = backoff(this.retries++, this.options.reconnectDelayMs ?? 500, this.options.reconnectDelayMaxMs ?? 10_000)): void {
    this.clearRetry();
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      if (this.socket === socket && !socket.connected) {
        this.setState('connecting');
        socket.connect();
      }
    }, ms);
  }

  private clearRetry(): void {
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
  }

  private retrySendingLater(): void {
    // A send still running when the app closed the client ends here: nothing is tried again after close().
    if (this.outboxTimer || this.closed) return;
    this.outboxTimer = setTimeout(() => {
      this.outboxTimer = null;
      if (this.session.current) this.outbox.kick();
    }, backoff(3, 1_000, 5_000));
  }

  private async handleDeviceEvent(name: string, envelope: Envelope): Promise<void> {
    // Cast: the hub sends each device event with the envelope its name has in the AsyncAPI document.
    await this.events.emit(name as keyof DeviceEvents, envelope as never);
    if (name !== 'inbox.resync-required') return;
    const reason = (envelope.data as { reason?: string }).reason ?? 'INBOX_BOUND';
    await this.chats().catch((error: unknown) => this.events.emit('error', { error, event: 'chats' }));
    await this.events.emit('resync', { scope: 'inbox', reason, rooms: [], refetch: INBOX_STATE });
  }

  private async onRoomEvent(name: (typeof ROOM_EVENT_NAMES)[number], payload: unknown): Promise<void> {
    if (name === 'message.new') {
      const message = payload as RoomEvents['message.new'];
      if (!this.recent.add(message.id)) return;
      this.noteNewest(message);
    }
    await this.events.emit(name, payload as never);
  }

  private async onBroadcastsLapsed(payload: HubEvents['rooms.resync-required']): Promise<void> {
    const cursors = this.roomCursors();
    await this.events.emit('rooms.resync-required', payload);
    this.setState('catching-up');
    const rooms = [...cursors.keys()];
    try {
      await this.catchUpRooms(cursors);
    } catch (error) {
      await this.events.emit('error', { error, event: 'catch-up' });
    }
    await this.events.emit('resync', { scope: 'rooms', reason: payload.reason, rooms, refetch: [] });
    if (this.socket?.connected) this.setState('connected');
  }

  /** The newest message shown in each open room, by room. */
  private roomCursors(): Map<string, string | undefined> {
    return new Map([...this.openRooms].map(([roomId, open]) => [roomId, open.newest?.id]));
  }

  /**
   * Each open room's messages after the newest it had shown when the gap began (`cursors`: not the newest
   * now, which a live message may have moved past the missed ones), delivered as `message.new` (each
   * once); then the chat list.
   */
  private async catchUpRooms(cursors: Map<string, string | undefined>): Promise<void> {
    for (const [roomId, cursor] of cursors) {
      for (let after = cursor; after; ) {
        const page = await ok(this.api.GET('/api/messages/{roomId}', { params: { path: { roomId }, query: { after, limit: PAGE } } }));
        const messages = byTime(page.items);
        for (const message of messages) {
          if (!this.recent.add(message.id)) continue;
          this.noteNewest(message);
          await this.events.emit('message.new', { ...message, messageId: message.id } as RoomEvents['message.new']);
        }
        after = messages.length >= PAGE ? messages.at(-1)!.id : undefined;
      }
    }
    await this.chats();
  }

  private noteNewest(message: { id: string; roomId: string; createdAt: string; parentId?: string | null }): void {
    const open = this.openRooms.get(message.roomId);
    if (!open || message.parentId) return;
    if (!open.newest || later(message, open.newest)) open.newest = { id: message.id, createdAt: message.createdAt };
  }

  private post(item: QueuedMessage): Promise<string> {
    return ok(
      this.api.PUT('/api/messages/{roomId}', {
        params: { path: { roomId: item.roomId } },
        // The same key on every send of this message: a repeat gets the first answer.
        headers: { 'Idempotency-Key': `message-${item.clientMessageId}` },
        body: item.body as Schemas['ChatMessage'],
      }),
    );
  }

  private async iceServers(): Promise<IceServers> {
    const cached = this.ice;
    if (cached && remainingMs(cached) > marginMs(cached)) return cached;
    this.ice = await ok(this.api.GET('/api/calls/ice-servers'));
    return this.ice;
  }

  private watchIceServers(handler: (servers: IceServers) => void): () => void {
    let timer: ReturnType<typeof setTimeout> | null = null;
    let stopped = false;
    const next = async (): Promise<void> => {
      try {
        const servers = await this.iceServers();
        if (stopped) return;
        handler(servers);
        timer = setTimeout(() => void next(), Math.max(1_000, remainingMs(servers) - marginMs(servers) + 1));
      } catch (error) {
        if (stopped || error instanceof SignedOutError) return;
        await this.events.emit('error', { error, event: 'ice-servers' });
        timer = setTimeout(() => void next(), 5_000);
      }
    };
    void next();
    return () => {
      stopped = true;
      if (timer) clearTimeout(timer);
    };
  }

  private async signal(signal: ClientEvents['call.signal']): Promise<void> {
    const socket = this.socket;
    if (!socket?.connected) throw new OfflineError(new Error('the socket is not connected'));
    const ack = (await socket.timeout(ACK_TIMEOUT_MS).emitWithAck('call.signal', signal)) as ClientAcks['call.signal'];
    if (!ack.ok) throw new ApiError(ack.status, ack.code, ack.message, ack.details ?? []);
  }
}

type Placed = { id: string; createdAt: string };

/** A timeline's order: by time, then id (negative when `a` comes first). */
function order(a: Placed, b: Placed): number {
  if (a.createdAt !== b.createdAt) return a.createdAt < b.createdAt ? -1 : 1;
  return a.id === b.id ? 0 : a.id < b.id ? -1 : 1;
}

/** Oldest first. */
const byTime = <T extends Placed>(messages: readonly T[]): T[] => [...messages].sort(order);
const later = (a: Placed, b: Placed): boolean => order(a, b) > 0;

const remainingMs = (servers: IceServers) => Date.parse(servers.expiresAt) - Date.now();
/** Fetched anew with a tenth of the credentials' life left (at least a minute). */
const marginMs = (servers: IceServers) => Math.max(60_000, (servers.ttl * 1000) / 10);

/** Waits for `promise`, or `ms` at most (its timer does not outlive it: it would hold a Node process open). */
async function withLimit(promise: Promise<void>, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([promise, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}

export type { SessionTokens };
