import { Emitter } from '@socket.io/redis-emitter';
import type { Redis } from 'ioredis';
import type { Keyspace } from './keyspace.js';
import { QUEUES, type Queues } from './queues.js';

/** Socket.io room names: one per device, one per user, one per chat room (README, "Device socket protocol"). */
export const deviceRoom = (deviceId: string) => `device:${deviceId}`;
export const userRoom = (userId: string) => `user:${userId}`;
export const chatRoom = (roomId: string) => `room:${roomId}`;


export type CallMedia = 'AUDIO' | 'VIDEO';

export interface CallEventData {
  callId: string;
  callerId: string;
  callerDeviceId: string;
  calleeId: string;
  media: CallMedia;
  state: string;
}

export interface RoomCallEventData {
  callId: string;
  roomId: string;
  startedBy: string;
  media: CallMedia;
}

/**
 * Every device event, by name, with its payload: the one typed map the hub, the emitter and the
 * services share. Each goes to a device as `{seq, at, data}`.
 */
export interface DeviceEventMap {
  /** Another device signed in to the account. */
  'device.added': { deviceId: string; name: string; platform: string };
  'call.incoming': CallEventData;
  /** The call was answered; `answeredByDeviceId` says on which device (the others stop ringing). */
  'call.answered': CallEventData & { answeredByDeviceId: string };
  'call.ended': CallEventData & { endedBy: string | null; reason: 'HANGUP' | 'MISSED' | 'REJECTED' | 'CANCELLED' | 'FAILED' };
  /** SDP offer/answer or ICE candidate from the other party's device in the call. */
  'call.signal': { callId: string; fromDeviceId: string; kind: 'offer' | 'answer' | 'candidate'; payload: unknown };
  /** A call started in a room the user is an enabled member of: ring (VoIP push where offline). */
  'room-call.incoming': RoomCallEventData;
  /** A device joined the room call; the joiner's other devices stop ringing. */
  'room-call.joined': RoomCallEventData & { userId: string; deviceId: string };
  /** A device left the room call; its media (`closedProducerIds`) is gone. */
  'room-call.left': RoomCallEventData & { userId: string; deviceId: string; closedProducerIds: string[] };
  /** The user declined on one device, or nobody answered in time: stop ringing. */
  'room-call.ring-stopped': RoomCallEventData & { reason: 'DECLINED' | 'MISSED' };
  /** A participant's device sends new media: consume it with POST /api/calls/{callId}/media/transports/{id}/consume. */
  'room-call.media-added': RoomCallEventData & { producerId: string; userId: string; deviceId: string; kind: 'audio' | 'video' };
  /** The room call ended (the last device left, nobody answered, or its media server went away). */
  'room-call.ended': RoomCallEventData & { reason: 'HANGUP' | 'MISSED' | 'FAILED' };
  /** Someone asks to connect (also after signing up, for invitations sent to the new number). */
  'contact.request': { requestId: string; sender: { id: string; displayName: string | null }; customMessage: string };
  /** A connection request the user sent was accepted. */
  'contact.accepted': { requestId: string; user: { id: string; displayName: string | null } };
  /**
   * Someone the user is not connected to invites them into a room (a direct chat: a message request).
   * Accept or decline with POST /api/rooms/{roomId}/invitation; until then the user is not a member.
   */
  'room.invitation': { roomId: string; roomType: string; roomName: string | null; inviter: { id: string; displayName: string | null } };
  /** A user the caller invited accepted and is now a member of the room. */
  'room.invitation-accepted': { roomId: string; user: { id: string; displayName: string | null } };
  /** Money arrived in one of the user's wallets from another member. */
  'wallet.transfer-received': { entryId: string; fromUserId: string; walletId: string; currency: string; amount: string };
  /** Someone asks the user to pay (a payment request item). */
  'wallet.payment-requested': { paymentRequestId: string; requesterId: string; currency: string; amount: string; note: string | null };
  /** A recipient paid their item of the user's payment request. */
  'wallet.payment-request-paid': { paymentRequestId: string; payerId: string; amount: string; currency: string; status: string };
  /** A site administrator decided the user's sending-limit request. */
  'wallet.limit-request-decided': { requestId: string; status: 'APPROVED' | 'REFUSED'; tier: string | null; noLimit: boolean; effectiveUntil: string | null };
  /** A deposit to the wallet's address on chain was credited. */
  'wallet.deposit-received': { walletId: string; currency: string; amount: string; txHash: string };
  /** A withdrawal moved on: `pending`, `sent` (with its transaction), `confirmed`, `refused` or `refunded`. */
  'wallet.withdrawal-updated': { withdrawalId: string; walletId: string; status: string; txHash: string | null };
  /** A device of the account removed its biometric key. */
  'device.biometric-key-removed': { deviceId: string; name: string };
  /** Processing of an uploaded file moved on; `state` READY with 100 when done. */
  'attachment.progress': { attachmentId: string; messageId: string; roomId: string; percent: number; state: 'PROCESSING' | 'READY' };
  /** An uploaded file could not be processed (not a readable image or video). */
  'attachment.failed': { attachmentId: string; messageId: string; roomId: string; reason: string };
  /** A summary asked for with POST /api/messages/{messageId}/tldr is ready. */
  'chat.tldr-ready': {
    requestId: string;
    roomId: string;
    messageId: string;
    summary: string;
    /** Language of the summary ("und" when the summarizer kept the conversation's own). */
    language: string;
    requestedLanguage: string;
    messageCount: number;
  };
  /** A device of a member of an end-to-end encrypted room registered its identity keys: it may now receive the room's keys. */
  'e2ee.device-added': { roomId: string; userId: string; deviceId: string; encryptionKey: string; signingKey: string };
  /** A device of the room lacks a key version: a device holding it answers with POST /api/e2ee/rooms/{roomId}/keys. */
  'e2ee.key-requested': { roomId: string; version: number; requestId: string; deviceId: string };
  /** Takes the place of a key request in inboxes once it was answered: nothing to do. */
  'e2ee.key-request-answered': { roomId: string; version: number; requestId: string };
  /** The set of devices that may hold the room's key changed: the next message should go under a new key version. */
  'e2ee.rotation-due': { roomId: string; reason: 'MEMBER_LEFT' | 'DEVICE_REVOKED' | 'DEVICE_ADDED' };
  /** The device fell past the inbox bound: refetch state over REST, then continue from `seq`. */
  'inbox.resync-required': { lastSeq: number; reason: 'INBOX_BOUND' | 'INBOX_RESET' };
}

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
export interface RoomEventMap {
  'message.new': { roomId: string; messageId: string; [field: string]: unknown };
  /** A member started or stopped typing in the room (relayed by the hub, rate-limited, never stored). */
  'typing.start': { roomId: string; userId: string };
  'typing.stop': { roomId: string; userId: string };
}

/** What the hub sends to device sockets. */
export type ServerToClientEvents = {
  [K in DeviceEventName]: (envelope: DeviceEventEnvelope<K>) => void;
} & {
  [K in keyof RoomEventMap]: (payload: RoomEventMap[K]) => void;
};

/** What devices send to the hub. */
export interface ClientToServerEvents {
  'inbox.ack': (body: { seq: number }) => void;
  /** Relay to the other device of the call; the ack says ok, or the coded error REST would give. */
  'call.signal': (body: unknown, ack?: (result: SocketAck) => void) => void;
  /** The user is typing in a room they are a member of (or stopped): relayed to the room's other members. */
  'typing.start': (body: unknown) => void;
  'typing.stop': (body: unknown) => void;
  /** Application-level round trip: the ack echoes the body (clients measure latency with it). */
  'hub.ping': (body: unknown, ack?: (echo: unknown) => void) => void;
}

export type SocketAck = { ok: true } | { ok: false; status: number; code: string; message: string };

/** How an event reaches a device that has no live socket: an alert push, a VoIP push, or nothing. */
export const PUSH_KIND: Partial<Record<DeviceEventName, 'alert' | 'voip'>> = {
  'device.added': 'alert',
  'contact.request': 'alert',
  'room.invitation': 'alert',
  'device.biometric-key-removed': 'alert',
  'wallet.transfer-received': 'alert',
  'wallet.deposit-received': 'alert',
  'wallet.payment-requested': 'alert',
  'wallet.limit-request-decided': 'alert',
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

/** Whether a device has a live socket (the presence area's store answers). */
export interface DevicePresence {
  isOnline(deviceId: string): Promise<boolean>;
}

export class DeviceEvents {
  private readonly emitter: Emitter<ServerToClientEvents>;

  constructor(
    private readonly deps: {
      redis: Redis;
      keys: Keyspace;
      inbox: EventInbox;
      presence: DevicePresence;
      /** The user's active devices (the devices area answers). */
      activeDeviceIds: (userId: string) => Promise<string[]>;
      queues: Queues;
    },
  ) {
    this.emitter = new Emitter<ServerToClientEvents>(deps.redis, { key: deps.keys.socketIo });
  }

  /** Sends one event to one device; resolves once it is stored (and so will be delivered). */
  async toDevice<K extends DeviceEventName>(deviceId: string, event: K, data: DeviceEventMap[K]): Promise<number> {
    const seq = await this.deps.inbox.append(deviceId, event, data);
    await this.deps.redis.publish(this.deps.keys.inboxPoke, deviceId);
    const kind = PUSH_KIND[event];
    // Job data holds ids only; the worker reads the event from the inbox.
    if (kind && !(await this.deps.presence.isOnline(deviceId))) await this.deps.queues.add(QUEUES.push, { deviceId, seq, kind });
    return seq;
  }

  /** Sends one event to every active device of each user, optionally sparing one device. */
  async toUsers<K extends DeviceEventName>(userIds: string[], event: K, data: DeviceEventMap[K], options: { exceptDeviceId?: string } = {}): Promise<void> {
    const deviceIds = (await Promise.all([...new Set(userIds)].map((userId) => this.deps.activeDeviceIds(userId)))).flat();
    await Promise.all(deviceIds.filter((id) => id !== options.exceptDeviceId).map((id) => this.toDevice(id, event, data)));
  }

  /** Replaces an event still waiting in a device's inbox (see DeviceInbox.replace); live sockets are not told again. */
  supersede<K extends DeviceEventName>(deviceId: string, seq: number, event: K, data: DeviceEventMap[K]): Promise<boolean> {
    return this.deps.inbox.replace(deviceId, seq, event, data);
  }

  /** Closes every socket of a device, on whatever node holds it. */
  disconnectDevice(deviceId: string): void {
    this.emitter.in(deviceRoom(deviceId)).disconnectSockets(true);
  }

  /** Broadcasts to every live socket in a chat room, on every node: one emit, no inbox. */
  toRoom<K extends keyof RoomEventMap>(roomId: string, event: K, payload: RoomEventMap[K]): void {
    // Cast: each broadcast event takes exactly its one payload.
    this.emitter.to(chatRoom(roomId)).emit(event, ...([payload] as Parameters<ServerToClientEvents[K]>));
  }

  /** Puts the live sockets of a user into a chat room's broadcast, on every node. */
  joinChatRoom(userId: string, roomId: string): void {
    this.emitter.in(userRoom(userId)).socketsJoin(chatRoom(roomId));
  }

  leaveChatRoom(userId: string, roomId: string): void {
    this.emitter.in(userRoom(userId)).socketsLeave(chatRoom(roomId));
  }
}
