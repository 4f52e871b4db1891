import type { RedisClient } from './redis.js';

/** The cluster messages of socket.io-adapter's ClusterAdapter this emitter sends (its `MessageType`). */
const MESSAGE = { BROADCAST: 3, SOCKETS_JOIN: 4, SOCKETS_LEAVE: 5, DISCONNECT_SOCKETS: 6 } as const;
/** socket.io-parser's EVENT packet. */
const EVENT_PACKET = 2;
/** Engine.IO's MESSAGE packet, which carries a socket.io packet. */
const ENGINE_MESSAGE = 4;
/** The hubs serve the main namespace only. */
const NAMESPACE = '/';
/** The adapter's name for messages that come from no server (they are never its own). */
const EMITTER_UID = 'emitter';
/**
 * The first byte of a room broadcast sent encoded (`broadcastEncoded`): never the first byte of an
 * adapter message, which is JSON (`{`) or msgpack (a map: 0x80-0x8f, 0xde, 0xdf).
 */
export const ENCODED_BROADCAST = 0x01;

/** Which sockets a message is for: those in any of `rooms` (every socket when empty) and in none of `except`. */
export interface SocketSelection {
  rooms: string[];
  except?: string[];
}

/**
 * Reaches the hubs' sockets from a process that holds none (api, worker) over the channels of
 * `@socket.io/redis-adapter`'s sharded adapter (`createShardedAdapter`, Redis 7 sharded pub/sub, in its
 * default `dynamic` mode), which `@socket.io/redis-emitter` does not speak (socket.io/socket.io-redis-emitter#127).
 *
 * A broadcast to one room, or a leave from it, goes on that room's channel, which only the hubs
 * holding a socket in the room subscribe to; anything else (several rooms, joins, disconnections) goes
 * on the namespace's channel, which every hub hears. The messages are the adapter's own (JSON, as it sends
 * messages without binary), so a hub cannot tell them from another hub's.
 */
export class ShardedEmitter {
  private readonly channel: string;

  constructor(
    private readonly redis: RedisClient,
    /** The adapter's `channelPrefix` (the keyspace's `socketIo`). */
    private readonly channelPrefix: string,
    /** The rooms with a channel of their own (the hubs' adapter subscribes to those only: see `subscribeOnlyTo`). */
    private readonly hasOwnChannel: (room: string) => boolean,
    /** Room broadcasts encoded once, here (`broadcastEncoded`); false: as the adapter's messages, which hubs built before encoded broadcasts read too. */
    private readonly encoded = true,
  ) {
    this.channel = namespaceChannel(channelPrefix);
  }

  /**
   * Emits `event` with its arguments to the selected sockets. Settles once Redis has taken the
   * broadcast (or refused it: logged, never a rejection), so a caller that waits for it before
   * answering keeps one sender's broadcasts in order even while a failover delays some of them.
   */
  broadcast(to: SocketSelection, event: string, ...args: unknown[]): Promise<void> {
    const [room] = to.rooms;
    if (this.encoded && to.rooms.length === 1 && room !== undefined && (to.except ?? []).length === 0 && this.hasOwnChannel(room)) return this.broadcastEncoded(room, event, args);
    return this.publish(this.channelOf(to.rooms), MESSAGE.BROADCAST, { packet: { type: EVENT_PACKET, data: [event, ...args], nsp: NAMESPACE }, opts: options(to) });
  }

  /**
   * A broadcast to one room, to every socket in it, encoded once here for every hub and socket: the
   * marker byte, then the WebSocket frame's text a hub writes as it is (the Engine.IO message `4`
   * carrying the socket.io EVENT packet `2` of the main namespace: what socket.io's own encoder makes
   * of the same event). A hub holding the room publishes those bytes to the room's sockets without
   * decoding them (realtime/room-broadcasts.ts); one that holds it no longer has no subscription.
   */
  private broadcastEncoded(room: string, event: string, args: unknown[]): Promise<void> {
    return this.send(roomChannel(this.channelPrefix, room), `${String.fromCharCode(ENCODED_BROADCAST)}${frameOf(event, args)}`);
  }

  /** Adds the selected sockets to `rooms`, on whatever hub holds them. */
  socketsJoin(to: SocketSelection, rooms: string[]): void {
    void this.publish(this.channel, MESSAGE.SOCKETS_JOIN, { opts: options(to), rooms });
  }

  /**
   * Takes the selected sockets out of `rooms`. Out of one room with a channel, on that room's channel:
   * only the hubs holding a socket in it need to hear it, and they hear it before any broadcast sent to
   * the room after it (one channel is one shard and one connection; two channels may be two).
   */
  socketsLeave(to: SocketSelection, rooms: string[]): void {
    void this.publish(this.channelOf(rooms), MESSAGE.SOCKETS_LEAVE, { opts: options(to), rooms });
  }

  /** Closes the selected sockets (`close`: the underlying connection too). */
  disconnectSockets(to: SocketSelection, close: boolean): void {
    void this.publish(this.channel, MESSAGE.DISCONNECT_SOCKETS, { opts: options(to), close });
  }

  /** One room with a channel: that room's; otherwise the namespace's. */
  private channelOf(rooms: string[]): string {
    const [room] = rooms;
    return rooms.length === 1 && room !== undefined && this.hasOwnChannel(room) ? roomChannel(this.channelPrefix, room) : this.channel;
  }

  /**
   * Settles once Redis took the message or refused it: a refused publish is logged by the client
   * (keepPublishesHandled, which every client of the platform gets) and settles too, so a caller that
   * does not wait cannot end the process with an unhandled rejection while Redis is away.
   */
  private publish(channel: string, type: number, data: object): Promise<void> {
    return this.send(channel, JSON.stringify({ uid: EMITTER_UID, nsp: NAMESPACE, type, data }));
  }

  private send(channel: string, message: string): Promise<void> {
    return this.redis.spublish(channel, message).then(
      () => undefined,
      () => undefined,
    );
  }
}

/** The WebSocket frame's text of an event to sockets of the main namespace: Engine.IO's message `4`, socket.io's EVENT `2`, the arguments. */
export const frameOf = (event: string, args: unknown[]) => `${ENGINE_MESSAGE}${EVENT_PACKET}${JSON.stringify([event, ...args])}`;

/** The channel every hub hears (the adapter's `channel`). */
const namespaceChannel = (channelPrefix: string) => `${channelPrefix}#${NAMESPACE}#`;

/** The channel of one room, which the hubs holding a socket in it hear (the adapter's `dynamicChannel`). */
export const roomChannel = (channelPrefix: string, room: string) => `${namespaceChannel(channelPrefix)}${room}#`;

/** The room of a room's channel (`roomChannel`), or null for any other channel of the adapter. */
export function roomOfChannel(channelPrefix: string, channel: string): string | null {
  const namespace = namespaceChannel(channelPrefix);
  return channel.length > namespace.length + 1 && channel.startsWith(namespace) ? channel.slice(namespace.length, -1) : null;
}

/**
 * Narrows which rooms the hub's sharded adapter gives a channel of their own (by default every room
 * that is not a socket id): a room without one costs the hub no subscription, and its broadcasts go
 * on the namespace's channel (the adapter's own `computeChannel` would still pick the room's channel
 * for a broadcast to it alone, so only rooms never broadcast to alone may be left out).
 */
export function subscribeOnlyTo(adapter: object, hasOwnChannel: (room: string) => boolean): void {
  // Cast: `shouldUseASeparateNamespace` is the sharded adapter's (unexported) rule, read on each room's creation and deletion.
  const rule = adapter as { shouldUseASeparateNamespace?: (room: string) => boolean };
  if (typeof rule.shouldUseASeparateNamespace !== 'function') throw new Error('not the sharded Redis adapter');
  const either = rule.shouldUseASeparateNamespace.bind(adapter);
  rule.shouldUseASeparateNamespace = (room) => either(room) && hasOwnChannel(room);
}

/** The adapter's encoded broadcast options. */
function options(to: SocketSelection) {
  return { rooms: to.rooms, except: to.except ?? [], flags: {} };
}
