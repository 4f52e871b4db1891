import type { RedisClient } from './redis.js';

/** The cluster messages of socket.io-adapter's ClusterAdapter this emitter sends (its `MessageType`). */
const MESSAGE = { BROADCAST: 3, SOCKETS_JOIN: 4, SOCKETS_LEAVE: 5, DISCONNECT_SOCKETS: 6 } as const;
/** socket.io-parser's EVENT packet. */
const EVENT_PACKET = 2;
/** The hubs serve the main namespace only. */
const NAMESPACE = '/';
/** The adapter's name for messages that come from no server (they are never its own). */
const EMITTER_UID = 'emitter';

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
  ) {
    this.channel = namespaceChannel(channelPrefix);
  }

  /**
   * Emits `event` with its arguments to the selected sockets. Settles once Redis has taken the
   * broadcast (or refused it: logged, never a rejection), so a caller that waits for it before
   * answering keeps one sender's broadcasts in order even while a failover delays some of them.
   */
  broadcast(to: SocketSelection, event: string, ...args: unknown[]): Promise<void> {
    return this.publish(this.channelOf(to.rooms), MESSAGE.BROADCAST, { packet: { type: EVENT_PACKET, data: [event, ...args], nsp: NAMESPACE }, opts: options(to) });
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
    return this.redis.spublish(channel, JSON.stringify({ uid: EMITTER_UID, nsp: NAMESPACE, type, data })).then(
      () => undefined,
      () => undefined,
    );
  }
}

/** The channel every hub hears (the adapter's `channel`). */
const namespaceChannel = (channelPrefix: string) => `${channelPrefix}#${NAMESPACE}#`;

/** The channel of one room, which the hubs holding a socket in it hear (the adapter's `dynamicChannel`). */
export const roomChannel = (channelPrefix: string, room: string) => `${namespaceChannel(channelPrefix)}${room}#`;

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
