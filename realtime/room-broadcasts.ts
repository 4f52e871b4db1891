import { ENCODED_BROADCAST, frameOf, roomOfChannel } from '../src/platform/sharded-emitter.js';
import type { HubServer } from './socket-types.js';

/** uWebSockets.js's publish: the bytes to every WebSocket subscribed to the topic, as one text frame each. */
export type PublishFrame = (topic: string, frame: Uint8Array, isBinary: boolean) => boolean;

/** socket.io's uWebSockets.js topic of a room of the main namespace (socket.io/lib/uws.ts). */
const topicOf = (room: string) => `/\x1f${room}`;

/** What a room broadcast of a sender built before encoded broadcasts (or told ROOM_BROADCASTS_ENCODED=false) is: the sharded adapter's BROADCAST message, as the emitter wrote it. */
interface AdapterBroadcast {
  uid?: string;
  nsp?: string;
  type?: number;
  data?: { requestId?: string; packet?: { type?: number; data?: [string, ...unknown[]]; id?: number }; opts?: { rooms?: string[]; except?: string[]; flags?: Record<string, unknown> } };
}

/**
 * The frame (`42…`: the Engine.IO message carrying the socket.io EVENT packet) of a room broadcast in the adapter's format from an api or worker (an emitter) to every
 * socket of one room, encoded as socket.io's own encoder would; null for any other message (from a
 * hub, with exceptions, flags or an acknowledgement), which the adapter handles.
 */
function adapterFrame(raw: Buffer): Buffer | null {
  if (raw[0] !== 0x7b) return null;
  // Cast: checked field by field below; anything else is left to the adapter.
  const message = JSON.parse(raw.toString()) as AdapterBroadcast;
  const { data } = message;
  const simple =
    message.uid === 'emitter' && message.nsp === '/' && message.type === 3 && data?.requestId === undefined && data?.packet?.type === 2 && data.packet.id === undefined &&
    Array.isArray(data.packet.data) && typeof data.packet.data[0] === 'string' && data.opts?.rooms?.length === 1 && (data.opts.except ?? []).length === 0 && Object.keys(data.opts.flags ?? {}).length === 0;
  if (!simple) return null;
  const [event, ...args] = data.packet!.data!;
  return Buffer.from(frameOf(event, args));
}

/**
 * Takes the room broadcasts the api and worker send before the sharded adapter sees them. One sent
 * encoded (ShardedEmitter.broadcastEncoded) goes to the room's sockets as it came: no decoding, no
 * re-encoding, and no step per socket in JavaScript (uWebSockets.js publishes it to the room's topic,
 * which socket.io subscribes every WebSocket of the room to). One in the adapter's format (a sender
 * built before encoded broadcasts) is encoded here once and goes the same way. Every other message on the adapter's
 * channels (joins, leaves, a hub's broadcasts, anything with exceptions) goes to the adapter.
 */
export function takeRoomBroadcasts(
  io: HubServer,
  options: {
    channelPrefix: string;
    /** uWebSockets.js's publish once the hub listens on it; until then, or on `ws`, each socket of the room is written to. */
    publish: () => PublishFrame | undefined;
    /** Told of each room broadcast taken (either format). */
    onReceived: () => void;
  },
): void {
  const nsp = io.of('/');
  // Cast: `onRawMessage` is the sharded adapter's (unexported) entry for every message its subscriber
  // connection hears; the handler it registers calls it on the adapter, so replacing it here takes effect.
  const adapter = nsp.adapter as unknown as { onRawMessage?: (raw: Buffer, channel: Buffer | string) => void; rooms: Map<string, Set<string>> };
  const { onRawMessage } = adapter;
  if (typeof onRawMessage !== 'function') throw new Error('not the sharded Redis adapter');
  const adapted = onRawMessage.bind(adapter);
  /** Hands the Engine.IO message (`4…`) to the room's sockets. */
  const deliver = (room: string, frame: Buffer) => {
    const publish = options.publish();
    if (publish) {
      publish(topicOf(room), frame, false);
      return;
    }
    const sockets = adapter.rooms.get(room);
    if (!sockets) return;
    // Engine.IO adds its message type itself: the socket.io packet goes without the leading `4`.
    const packet = frame.toString('utf8', 1);
    for (const id of sockets) nsp.sockets.get(id)?.conn.write(packet);
  };
  adapter.onRawMessage = (raw, channel) => {
    const room = roomOfChannel(options.channelPrefix, channel.toString());
    if (room === null) return adapted(raw, channel);
    if (raw[0] === ENCODED_BROADCAST) {
      options.onReceived();
      // The marker byte dropped, nothing copied.
      return deliver(room, raw.subarray(1));
    }
    let frame: Buffer | null;
    try {
      frame = adapterFrame(raw);
    } catch {
      frame = null;
    }
    if (!frame) return adapted(raw, channel);
    options.onReceived();
    deliver(room, frame);
  };
}
