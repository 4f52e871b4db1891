import type { Keyspace } from '../platform/keyspace.js';
/**
 * The control protocol between the api role and sfu nodes: one JSON POST per operation to
 * `<node url>/sfu/<op>`, with the shared secret in a header. A call's media lives on the one node
 * chosen when the call starts; every device's transports, producers and consumers for that call are
 * kept there, keyed by call and device, so a device only ever touches its own.
 */
export const SFU_SECRET_HEADER = 'x-sfu-secret';

/** A transport as the device needs it to connect: WebRTC (phones) or plain RTP (servers, recorders). */
export type TransportInfo =
  | { id: string; type: 'webrtc'; direction: 'send' | 'recv'; iceParameters: unknown; iceCandidates: unknown[]; dtlsParameters: unknown }
  | { id: string; type: 'plain'; direction: 'send' | 'recv'; ip: string; port: number };

export interface ProducerInfo {
  producerId: string;
  deviceId: string;
  userId: string;
  kind: 'audio' | 'video';
}

export interface ConsumerInfo {
  consumerId: string;
  producerId: string;
  kind: 'audio' | 'video';
  rtpParameters: unknown;
}

interface Peer {
  callId: string;
  deviceId: string;
}

/** Every operation: what the api sends and what the node answers. */
export interface SfuOps {
  capabilities: { request: { callId: string }; response: { rtpCapabilities: unknown } };
  transport: { request: Peer & { direction: 'send' | 'recv'; type: 'webrtc' | 'plain' }; response: TransportInfo };
  connect: { request: Peer & { transportId: string; dtlsParameters?: unknown; ip?: string; port?: number }; response: Record<string, never> };
  produce: { request: Peer & { transportId: string; userId: string; kind: 'audio' | 'video'; rtpParameters: unknown }; response: ProducerInfo };
  consume: { request: Peer & { transportId: string; producerId: string; rtpCapabilities: unknown }; response: ConsumerInfo };
  resume: { request: Peer & { consumerId: string }; response: Record<string, never> };
  producers: { request: { callId: string }; response: { producers: ProducerInfo[] } };
  /** The device leaves: its transports close, and with them its producers and consumers. */
  leave: { request: Peer; response: { closedProducerIds: string[] } };
  /** The call ended: the router and everything in it go. */
  close: { request: { callId: string }; response: Record<string, never> };
}

export type SfuOp = keyof SfuOps;
export const SFU_OPS: readonly SfuOp[] = ['capabilities', 'transport', 'connect', 'produce', 'consume', 'resume', 'producers', 'leave', 'close'];

/** A refusal from the node, answered as 400 with this code (bad parameters, unknown ids). */
export interface SfuRefusal {
  code: string;
  message: string;
}

/** Redis keys of the node registry: a set of node ids, and one expiring key per live node. */
export type SfuKeys = Keyspace['sfu'];

/** What a node announces about itself every few seconds. */
export interface SfuNodeAnnouncement {
  id: string;
  url: string;
  routers: number;
}

/**
 * A node that has not announced itself for this long is taken as gone, and the calls it held end
 * as FAILED (the worker role looks every SFU_WATCH_EVERY_MS): a node killed outright is noticed
 * within about 4 s. A node whose mediasoup worker died reports the calls it lost at once.
 */
export const SFU_NODE_TTL_MS = 3_000;
export const SFU_ANNOUNCE_EVERY_MS = 1_000;
export const SFU_WATCH_EVERY_MS = 1_000;
