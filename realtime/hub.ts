import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { createShardedAdapter } from '@socket.io/redis-adapter';
import { Server } from 'socket.io';
import { Counter, Gauge, type Registry } from 'prom-client';
import type { us_listen_socket, WebSocketBehavior } from 'uWebSockets.js';
import type { Services } from '../src/composition.js';
import { HandshakeAuthSchema, InboxAckSchema, TypingSchema } from '../src/socket-protocol.js';
import type { Platform } from '../src/platform/platform.js';
import type { Logger } from '../src/platform/logger.js';
import { AppError } from '../src/platform/errors.js';
import { chatRoom, deviceRoom, hasOwnChannel, userRoom } from '../src/platform/device-events.js';
import { closeRedis, duplicate, keepPublishesHandled, onSubscriptionsRestored, type RedisClient } from '../src/platform/redis.js';
import { roomChannel, subscribeOnlyTo } from '../src/platform/sharded-emitter.js';
import { InboxDelivery } from './delivery.js';
import { takeRoomBroadcasts, type PublishFrame } from './room-broadcasts.js';
import { SlowSockets } from './slow-sockets.js';
import { loadUws, type UwsModule } from './uws.js';
import { callSignalHandler } from './handlers/calls.handlers.js';
import type { HubServer, HubSocket } from './socket-types.js';


export type SocketEngine = 'uws' | 'ws';

export interface Hub {
  io: HubServer;
  port: number;
  nodeId: string;
  close(): Promise<void>;
}

/** A socket relays typing.start for one room at most this often (clients repeat it every few seconds while typing). */
const TYPING_INTERVAL_MS = 2_000;

/**
 * The realtime role: socket.io on uWebSockets.js (or plain `ws`), joined to the other hub nodes by
 * the Redis adapter. The handshake uses the same token check as REST. Device events come from the
 * device's inbox (see InboxDelivery); presence is one expiring heartbeat per node in Redis and, per device, the set of nodes holding it.
 */
export async function startHub(
  platform: Pick<Platform, 'logger' | 'pubsub' | 'keys' | 'dependencies' | 'config'>,
  services: Services,
  options: { host: string; port: number; engine: SocketEngine; transports?: ('websocket' | 'polling')[]; metrics?: Registry },
): Promise<Hub> {
  const log = platform.logger.child({ role: 'realtime' });
  // Refused before anything connects: a hub on a stub would accept sockets and never answer.
  const uws = options.engine === 'uws' ? await loadUws() : undefined;
  const { inbox, presenceStore: presence } = services;
  const nodeId = randomUUID();
  const transports = options.transports ?? platform.config.SOCKET_TRANSPORTS;
  const io: HubServer = new Server({
    path: '/socket.io/',
    serveClient: false,
    transports,
    pingInterval: 25_000,
    pingTimeout: 20_000,
  });
  // The sharded adapter: a hub subscribes to the channel of each room it holds a socket in, so it
  // hears the broadcasts of those rooms only (and, on the namespace's channel, joins, leaves and
  // disconnections, which every hub hears).
  const pub = platform.dependencies.guardRedis(duplicate(platform.pubsub));
  keepPublishesHandled(pub, log);
  // Named, as the poke connection below, so an operator (or a test) can tell it in CLIENT LIST.
  const sub = duplicate(platform.pubsub, { connectionName: `${platform.keys.prefix}hub-rooms` });
  const subscribed = trackSubscriptions(sub, log);
  // Broadcasts published while the rooms' subscriptions were down (a Redis restart, a failover) reached
  // no socket here: once Redis has confirmed them again, every socket is told to catch up over REST.
  onSubscriptionsRestored(sub, (since) => {
    log.warn({ since }, 'room broadcasts lapsed and are back: sockets told to catch up');
    io.local.emit('rooms.resync-required', { reason: 'BROADCASTS_LAPSED', since: since.toISOString() });
    resyncs.inc({ reason: 'BROADCASTS_LAPSED' }, io.engine.clientsCount);
  });
  io.adapter(createShardedAdapter(pub, sub, { channelPrefix: platform.keys.socketIo, subscriptionMode: 'dynamic' }));
  // Device and user rooms are never broadcast to alone: no channel (and no subscription per socket) for them.
  subscribeOnlyTo(io.of('/').adapter, hasOwnChannel);
  // Room broadcasts sent encoded go to the room's sockets as they came (uWebSockets.js publishes them
  // to the room's topic when every socket is a WebSocket; otherwise each socket of the room is written).
  let publishFrame: PublishFrame | undefined;
  const webSocketsOnly = transports.length === 1 && transports[0] === 'websocket';
  let broadcastsReceived = 0;
  takeRoomBroadcasts(io, { channelPrefix: platform.keys.socketIo, publish: () => publishFrame, onReceived: () => broadcastsReceived++ });

  const slowBytes = platform.config.HUB_SLOW_SOCKET_BYTES;
  const limits = { slowBytes, graceMs: platform.config.HUB_SLOW_SOCKET_GRACE_MS, maxBytes: 4 * slowBytes };
  const registers = options.metrics ? [options.metrics] : [];
  new Gauge({ name: 'hub_sockets', help: 'Sockets this hub node holds', registers, collect() { this.set(io.engine.clientsCount); } });
  new Gauge({ name: 'hub_devices', help: 'Devices with at least one socket on this hub node', registers, collect() { this.set(delivery.deviceCount); } });
  const sent = new Counter({ name: 'hub_device_events_sent_total', help: 'Device events this hub node sent to sockets (from their inboxes)', registers });
  const connections = new Counter({ name: 'hub_connections_total', help: 'Sockets that completed the handshake on this hub node', registers });
  const disconnections = new Counter({ name: 'hub_disconnections_total', help: 'Sockets that closed on this hub node, by socket.io\'s reason (transport close, ping timeout, server namespace disconnect, ...)', labelNames: ['reason'], registers });
  const refusals = new Counter({ name: 'hub_handshake_refusals_total', help: 'Handshakes refused, by the code of their connect_error (UNAUTHORIZED, DATABASE_UNAVAILABLE, REDIS_UNAVAILABLE)', labelNames: ['code'], registers });
  let broadcastsCounted = 0;
  new Counter({
    name: 'hub_room_broadcasts_received_total',
    help: 'Room broadcasts from the api and worker this hub node received, each written to the room\'s sockets here as one frame',
    registers,
    collect() {
      this.inc(broadcastsReceived - broadcastsCounted);
      broadcastsCounted = broadcastsReceived;
    },
  });
  const resyncs = new Counter({ name: 'hub_resyncs_total', help: 'Resync notices sent to sockets: inbox.resync-required (INBOX_BOUND, INBOX_RESET) and rooms.resync-required (BROADCASTS_LAPSED)', labelNames: ['reason'], registers });
  const delivery = new InboxDelivery(inbox, (error) => log.error({ err: error }, 'inbox delivery failed'), (socket) => slow.isSlow(socket), () => sent.inc(), (reason) => resyncs.inc({ reason }));
  const slow = new SlowSockets(io, limits, log, (socket) => delivery.resume(socket));
  slow.start();
  // This hub's own channel: a device event pokes only the hubs that hold its device.
  const pokeChannel = platform.keys.hubPokes(nodeId);
  // Named, so an operator (or a test) can tell it in CLIENT LIST.
  const pokes = duplicate(platform.pubsub, { connectionName: `${platform.keys.prefix}hub-pokes` });
  await pokes.ssubscribe(pokeChannel);
  pokes.on('smessage', (_channel: string, deviceId: string) => delivery.poke(deviceId));
  // Pokes published while the connection was down (Redis restarted, the connection dropped, a failover)
  // are lost: once subscribed again, every device this hub holds reads its inbox, so nothing waits for a later poke.
  onSubscriptionsRestored(pokes, () => [...delivery.deviceIds].forEach((deviceId) => delivery.poke(deviceId)));

  await presence.beat(nodeId);
  const heartbeat = setInterval(() => {
    presence.beat(nodeId).catch((error: unknown) => log.warn({ err: error }, 'presence heartbeat failed'));
  }, Math.max(250, Math.floor(presence.ttlMs / 3)));

  io.use(handshakeGuard(platform, services, log, (rooms) => subscribed(rooms.map((room) => roomChannel(platform.keys.socketIo, room))), (code) => refusals.inc({ code })));

  // Listeners are shared by every socket (`this` is the socket) rather than closures per socket: at
  // tens of thousands of sockets each closure costs memory.
  function onInboxAck(this: HubSocket, body: unknown) {
    const parsed = InboxAckSchema.safeParse(body);
    if (!parsed.success) return;
    inbox.ack(this.data.principal.deviceId, parsed.data.seq).catch((error: unknown) => log.warn({ err: error }, 'inbox ack failed'));
  }
  // Typing notices go straight to the room's other members' sockets on every node; nothing is stored.
  // A socket relays typing.start for a room at most once per TYPING_INTERVAL_MS, and only for a room
  // its user is a member of (its socket is in that room's broadcast).
  function onTyping(socket: HubSocket, event: 'typing.start' | 'typing.stop', body: unknown) {
    const parsed = TypingSchema.safeParse(body);
    if (!parsed.success || !socket.rooms.has(chatRoom(parsed.data.roomId))) return;
    const { roomId } = parsed.data;
    const now = Date.now();
    if (event === 'typing.start') {
      if (socket.data.typing?.roomId === roomId && now - socket.data.typing.at < TYPING_INTERVAL_MS) return;
      socket.data.typing = { roomId, at: now };
    } else if (socket.data.typing?.roomId === roomId) socket.data.typing = undefined;
    const { userId } = socket.data.principal;
    socket.to(chatRoom(roomId)).except(userRoom(userId)).emit(event, { roomId, userId });
  }
  function onTypingStart(this: HubSocket, body: unknown) {
    onTyping(this, 'typing.start', body);
  }
  function onTypingStop(this: HubSocket, body: unknown) {
    onTyping(this, 'typing.stop', body);
  }
  function onInboxHead(this: HubSocket, _body: unknown, ack?: (head: { seq: number }) => void) {
    if (typeof ack !== 'function') return;
    inbox.newest(this.data.principal.deviceId).then(
      (seq) => ack({ seq }),
      (error: unknown) => log.warn({ err: error }, 'inbox head not read'),
    );
  }
  function onPing(body: unknown, ack?: (echo: unknown) => void) {
    if (typeof ack === 'function') ack(body);
  }
  function onDisconnect(this: HubSocket, reason: string) {
    disconnections.inc({ reason });
    const { deviceId } = this.data.principal;
    if (delivery.detach(this, deviceId)) {
      presence.release(nodeId, deviceId).catch((error: unknown) => log.warn({ err: error }, 'presence release failed'));
    }
  }
  const onCallSignal = callSignalHandler(services.calls, log);

  io.on('connection', (socket: HubSocket) => {
    connections.inc();
    const { deviceId } = socket.data.principal;
    presence.connect(nodeId, deviceId).catch((error: unknown) => log.warn({ err: error }, 'presence update failed'));
    delivery.attach(socket, deviceId, HandshakeAuthSchema.safeParse(socket.handshake.auth).data?.lastSeq ?? 0);
    // Held for the life of the socket but needed only at the handshake: the token, the request and
    // its headers are dropped (about 2 KB a socket at tens of thousands of sockets).
    const { handshake } = socket;
    handshake.auth = {};
    handshake.headers = {};
    handshake.query = {};
    handshake.url = '';
    handshake.time = '';
    // Cast: engine.io's Socket types `request` as read-only; it is a plain field, dropped to free the handshake's memory.
    (socket.conn as unknown as { request: unknown }).request = null;

    socket.on('inbox.ack', onInboxAck);
    socket.on('call.signal', onCallSignal);
    socket.on('inbox.head', onInboxHead);
    socket.on('hub.ping', onPing);
    socket.on('typing.start', onTypingStart);
    socket.on('typing.stop', onTypingStop);
    socket.on('disconnect', onDisconnect);
  });

  // Posts in this process ask this hub first whether a device is online (no Redis round trip for its own sockets).
  const unregisterLocal = presence.holdsLocally((deviceId) => delivery.socketsOf(deviceId) > 0);
  const { port, closeListener, publish } = await listen(io, uws, options, limits.maxBytes);
  if (webSocketsOnly) publishFrame = publish;
  log.info({ port, engine: options.engine, nodeId }, 'socket hub listening');

  return {
    io,
    port,
    nodeId,
    async close() {
      unregisterLocal();
      clearInterval(heartbeat);
      slow.close();
      const held = [...delivery.deviceIds];
      // Only this node's sockets (io.disconnectSockets would go to every node through the adapter),
      // told first, then closed as a transport close: socket.io clients reconnect from that at once,
      // where a server disconnect ('io server disconnect') would leave them off for good.
      io.local.emit('hub.draining', { reason: 'SHUTDOWN' });
      for (const socket of io.of('/').sockets.values()) socket.conn.close();
      await Promise.allSettled([presence.nodeGone(nodeId), ...held.map((deviceId) => presence.release(nodeId, deviceId))]);
      await closeListener();
      await new Promise<void>((resolve) => io.close(() => resolve()));
      await Promise.allSettled([pub, sub, pokes].map(closeRedis));
    },
  };
}

/**
 * The handshake: the same token check as REST, the socket joined to its device, user and chat rooms
 * before the connection completes. While MongoDB or Redis is away the client gets `connect_error` with
 * the dependency's code and `data.retryAfter` (seconds), not UNAUTHORIZED (which would sign a phone out).
 */
function handshakeGuard(
  platform: Pick<Platform, 'dependencies'>,
  services: Pick<Services, 'auth' | 'rooms'>,
  log: Logger,
  subscribed: (rooms: string[]) => Promise<void>,
  refused: (code: string) => void,
): Parameters<HubServer['use']>[0] {
  const { auth, rooms } = services;
  const unavailable = (refusal: AppError) => Object.assign(new Error(refusal.code), { data: { code: refusal.code, retryAfter: platform.dependencies.retryAfterSeconds } });
  return (socket, answer) => {
    // Each refusal is counted by its code (the hub's metrics).
    const next = (error?: Error) => {
      if (error) refused(error.message);
      answer(error);
    };
    const handshake = HandshakeAuthSchema.safeParse(socket.handshake.auth);
    if (!handshake.success) return next(new Error('UNAUTHORIZED'));
    // A dependency away is not a bad token: the client is told which, and when to try again.
    const refusal = platform.dependencies.refusal();
    if (refusal) return next(unavailable(refusal));
    // Every step's failure (the token, the rooms' read, a subscription Redis refused) ends the handshake
    // with an answer: one that escaped would leave the phone waiting with no connect_error.
    const admitted = async () => {
      const principal = await auth.authenticate(handshake.data.token);
      socket.data.principal = principal;
      // Joined before the connection completes, so no broadcast to the user's rooms is missed after it.
      const roomIds = await rooms.chatRoomIdsOf(principal.userId);
      const joined = [deviceRoom(principal.deviceId), userRoom(principal.userId), ...roomIds.map(chatRoom)];
      await socket.join(joined);
      // A room new to this hub is subscribed to as it is joined; the connection completes once Redis has confirmed it.
      await subscribed(joined.filter(hasOwnChannel));
    };
    admitted().then(
      () => next(),
      (error: unknown) => {
        const away = platform.dependencies.noteError(error);
        if (away) return next(unavailable(platform.dependencies.unavailable(away)));
        if (!(error instanceof AppError)) log.error({ err: error }, 'socket handshake failed');
        next(new Error('UNAUTHORIZED'));
      },
    );
  };
}

/**
 * Records the adapter's SSUBSCRIBEs until Redis confirms them; the returned function waits for those
 * of the given channels still unconfirmed (at once for channels subscribed already).
 */
function trackSubscriptions(sub: RedisClient, log: Logger): (channels: string[]) => Promise<void> {
  const pending = new Map<string, Promise<unknown>>();
  // Cast: ioredis's ssubscribe has overloads (callback forms); the adapter calls it with channels only.
  const ssubscribe = sub.ssubscribe.bind(sub) as (...channels: string[]) => Promise<unknown>;
  // Cast: the wrapper is that one overload.
  sub.ssubscribe = ((...channels: string[]) => {
    const confirmed = ssubscribe(...channels);
    for (const channel of channels) pending.set(channel, confirmed);
    confirmed
      .catch((error: unknown) => log.warn({ err: error, channels }, 'a room subscription failed'))
      .finally(() => channels.forEach((channel) => pending.get(channel) === confirmed && pending.delete(channel)));
    return confirmed;
  }) as typeof sub.ssubscribe;
  return async (channels) => {
    await Promise.all(channels.map((channel) => pending.get(channel)));
  };
}

/** Listens on uWebSockets.js (when loaded) or on a node:http server with ws; the port, and how to stop listening. */
async function listen(io: HubServer, uws: UwsModule | undefined, options: { host: string; port: number }, maxBytes: number): Promise<{ port: number; closeListener: () => Promise<void>; publish?: PublishFrame }> {
  if (uws) {
    const app = uws.App();
    // At maxBytes unsent, uWebSockets.js closes the socket rather than dropping what it is sent (engine.io does not pass this option on).
    const ws = app.ws.bind(app);
    // Cast: the wrapper has ws()'s signature; TypeScript cannot see it through the generic behaviour type.
    app.ws = ((pattern: string, behavior: WebSocketBehavior<unknown>) => ws(pattern, { ...behavior, closeOnBackpressureLimit: true })) as typeof app.ws;
    // Cast: socket.io passes these options on to uWebSockets.js; its types list only its own.
    io.attachApp(app, { maxBackpressure: maxBytes } as Parameters<typeof io.attachApp>[1]);
    const listenSocket = await new Promise<us_listen_socket>((resolve, reject) => {
      app.listen(options.host, options.port, (socket) => (socket ? resolve(socket) : reject(new Error(`cannot listen on ${options.host}:${options.port}`))));
    });
    return { port: uws.us_socket_local_port(listenSocket), closeListener: async () => uws.us_listen_socket_close(listenSocket), publish: (topic, frame, isBinary) => app.publish(topic, frame, isBinary) };
  }
  const server = http.createServer();
  io.attach(server);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const address = server.address();
  return { port: typeof address === 'object' && address ? address.port : options.port, closeListener: () => new Promise((resolve) => server.close(() => resolve())) };
}
