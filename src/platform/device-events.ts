import type { RedisClient } from './redis.js';
import type { z } from 'zod';
import type { DEVICE_EVENTS, HUB_EVENTS, ROOM_EVENTS } from './device-events.schemas.js';
import type { Keyspace } from './keyspace.js';
import { QUEUES, type Queues } from './queues.js';
import { ShardedEmitter } from './sharded-emitter.js';

/** Socket.io room names: one per device, one per user, one per chat room (docs/clients/socket-protocol.md). */
export const deviceRoom = (deviceId: string) => `device:${deviceId}`;
export const userRoom = (userId: string) => `user:${userId}`;
export const chatRoom = (roomId: string) => `room:${roomId}`;
/**
 * Only chat rooms are broadcast to alone, so only they have a pub/sub channel of their own (the
 * sharded adapter's and ShardedEmitter's room channels); device and user rooms are reached through
 * the namespace's channel (joins, leaves, disconnections).
 */
export const hasOwnChannel = (room: string) => room.startsWith('room:');


export type CallMedia = 'AUDIO' | 'VIDEO';
/** What every 1:1 call event carries. */
export type CallEventData = z.infer<(typeof DEVICE_EVENTS)['call.incoming']>;
/** What every room call event carries. */
export type RoomCallEventData = z.infer<(typeof DEVICE_EVENTS)['room-call.incoming']>;

/**
 * Every device event, by name, with its payload: the one typed map the hub, the emitter and the
 * services share, inferred from the schemas the protocol document is made of. Each goes to a device
 * as `{seq, at, data}`.
 */
export type DeviceEventMap = { [K in keyof typeof DEVICE_EVENTS]: z.infer<(typeof DEVICE_EVENTS)[K]> };

export type DeviceEventName = keyof DeviceEventMap;

export interface DeviceEventEnvelope<K extends DeviceEventName = DeviceEventName> {
  seq: number;
  at: string;
  data: DeviceEventMap[K];
}

/**
 * Room broadcasts: live only, not stored in inboxes (devices catch up on chat through the
 * message-reading API). One `io.to(room).emit()` reaches every member's sockets on every node.
 */
export type RoomEventMap = { [K in keyof typeof ROOM_EVENTS]: z.infer<(typeof ROOM_EVENTS)[K]> };

/** What the hub sends to device sockets. */
export type ServerToClientEvents = {
  [K in DeviceEventName]: (envelope: DeviceEventEnvelope<K>) => void;
} & {
  [K in keyof RoomEventMap]: (payload: RoomEventMap[K]) => void;
} & {
  [K in keyof typeof HUB_EVENTS]: (payload: z.infer<(typeof HUB_EVENTS)[K]>) => void;
};

/** What devices send to the hub. */
export interface ClientToServerEvents {
  'inbox.ack': (body: { seq: number }) => void;
  /** Relay to the other device of the call; the ack says ok, or the coded error REST would give. */
  'call.signal': (body: unknown, ack?: (result: SocketAck) => void) => void;
  /** The user is typing in a room they are a member of (or stopped): relayed to the room's other members. */
  'typing.start': (body: unknown) => void;
  'typing.stop': (body: unknown) => void;
  /** The newest sequence the device's inbox holds (0: none): the device has caught up once it processed it. */
  'inbox.head': (body: unknown, ack?: (head: { seq: number }) => void) => void;
  /** Application-level round trip: the ack echoes the body (clients measure latency with it). */
  'hub.ping': (body: unknown, ack?: (echo: unknown) => void) => void;
}

export type SocketAck = { ok: true } | { ok: false; status: number; code: string; message: string; details?: { field: string; message: string }[] };

/** How an event reaches a device that has no live socket: an alert push, a VoIP push, or nothing. */
export const PUSH_KIND: Partial<Record<DeviceEventName, 'alert' | 'voip'>> = {
  'device.added': 'alert',
  'contact.request': 'alert',
  'room.invitation': 'alert',
  'device.biometric-key-removed': 'alert',
  'wallet.transfer-received': 'alert',
  'wallet.deposit-received': 'alert',
  'wallet.app-money-received': 'alert',
  'wallet.payment-requested': 'alert',
  'wallet.limit-request-decided': 'alert',
  'message.reaction': 'alert',
  'call.incoming': 'voip',
  'room-call.incoming': 'voip',
};


/**
 * Reaches devices on any hub node from any process (api, worker) through Redis; services use this
 * and never import socket.io. Device events are written to the device's inbox first, then the hubs
 * are poked, then offline devices are pushed to where the event warrants it.
 */
/** Where device events wait for their device (the inbox area's DeviceInbox answers; given by the composition). */
export interface EventInbox {
  append<K extends DeviceEventName>(deviceId: string, event: K, data: DeviceEventMap[K]): Promise<number>;
  replace<K extends DeviceEventName>(deviceId: string, seq: number, event: K, data: DeviceEventMap[K]): Promise<boolean>;
}

/** Which hub nodes hold a socket of a device (the presence area's store answers). */
export interface DevicePresence {
  nodesOf(deviceId: string): Promise<string[]>;
}

export class DeviceEvents {
  private readonly emitter: ShardedEmitter;

  constructor(
    private readonly deps: {
      /** The pub/sub role's client: pokes and broadcasts. */
      pubsub: RedisClient;
      keys: Keyspace;
      inbox: EventInbox;
      presence: DevicePresence;
      /** The user's active devices (the devices area answers). */
      activeDeviceIds: (userId: string) => Promise<string[]>;
      queues: Queues;
      /** Room broadcasts encoded once by the sender (ShardedEmitter), or as the adapter's messages. */
      encodedBroadcasts?: boolean;
    },
  ) {
    this.emitter = new ShardedEmitter(deps.pubsub, deps.keys.socketIo, hasOwnChannel, deps.encodedBroadcasts ?? true);
  }

  /**
   * Sends one event to one device; resolves once it is stored (and so will be delivered). `push:
   * false` leaves out the push an offline device would get for it (the user was pushed about it already).
   */
  async toDevice<K extends DeviceEventName>(deviceId: string, event: K, data: DeviceEventMap[K], options: { push?: boolean } = {}): Promise<number> {
    // In one round trip, to one server (the device's inbox and its nodes share a slot), the append first:
    // a hub that adds itself to the device's nodes after this read reads the inbox after this append.
    const [seq, nodes] = await Promise.all([this.deps.inbox.append(deviceId, event, data), this.deps.presence.nodesOf(deviceId)]);
    // Only the hubs holding the device are poked, each on its own channel; a hub that is gone has no
    // subscriber there, so the answers also say whether any hub still holds the device.
    const heard = await Promise.all(nodes.map((nodeId) => this.deps.pubsub.spublish(this.deps.keys.hubPokes(nodeId), deviceId).then(Number)));
    const kind = options.push === false ? undefined : PUSH_KIND[event];
    // Job data holds ids only; the worker reads the event from the inbox.
    if (kind && !heard.some((hubs) => hubs > 0)) await this.deps.queues.add(QUEUES.push, { deviceId, seq, kind });
    return seq;
  }

  /** Sends one event to every active device of each user, optionally sparing one device. */
  async toUsers<K extends DeviceEventName>(userIds: string[], event: K, data: DeviceEventMap[K], options: { exceptDeviceId?: string; push?: boolean } = {}): Promise<void> {
    const deviceIds = (await Promise.all([...new Set(userIds)].map((userId) => this.deps.activeDeviceIds(userId)))).flat();
    await Promise.all(deviceIds.filter((id) => id !== options.exceptDeviceId).map((id) => this.toDevice(id, event, data, { push: options.push })));
  }

  /** Replaces an event still waiting in a device's inbox (see DeviceInbox.replace); live sockets are not told again. */
  supersede<K extends DeviceEventName>(deviceId: string, seq: number, event: K, data: DeviceEventMap[K]): Promise<boolean> {
    return this.deps.inbox.replace(deviceId, seq, event, data);
  }

  /** Closes every socket of a device, on whatever node holds it. */
  disconnectDevice(deviceId: string): void {
    this.emitter.disconnectSockets({ rooms: [deviceRoom(deviceId)] }, true);
  }

  /**
   * Broadcasts to every live socket in a chat room, on every node: one emit, no inbox. Settles once
   * Redis took it (never rejects): awaited before answering, one sender's broadcasts stay in order.
   */
  toRoom<K extends keyof RoomEventMap>(roomId: string, event: K, payload: RoomEventMap[K], options: { exceptUserIds?: string[] } = {}): Promise<void> {
    return this.emitter.broadcast({ rooms: [chatRoom(roomId)], except: (options.exceptUserIds ?? []).map(userRoom) }, event, payload);
  }

  /** Puts the live sockets of a user into a chat room's broadcast, on every node. */
  joinChatRoom(userId: string, roomId: string): void {
    this.emitter.socketsJoin({ rooms: [userRoom(userId)] }, [chatRoom(roomId)]);
  }

  leaveChatRoom(userId: string, roomId: string): void {
    this.emitter.socketsLeave({ rooms: [userRoom(userId)] }, [chatRoom(roomId)]);
  }
}
