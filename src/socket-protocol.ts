/**
 * The device socket protocol as a contract: what a device sends at the handshake and after it, what
 * the hub acknowledges, and the AsyncAPI 3 document generated from the same schemas the hub validates
 * with and the emitters are typed by (docs/clients/socket-protocol.md explains it in prose). The api
 * serves the document at /v3/asyncapi/device-socket, beside the OpenAPI documents.
 */
import { z } from 'zod';
import { CallSignalSchema } from './calls/calls.schemas.js';
import { MessageDtoSchema } from './messages/messages.schemas.js';
import { CommonErrors } from './platform/common.errors.js';
import { IdParam } from './platform/common.schemas.js';
import { PUSH_KIND, type DeviceEventName } from './platform/device-events.js';
import { DEVICE_EVENTS, HUB_EVENTS, ROOM_EVENTS } from './platform/device-events.schemas.js';

const Seq = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER);

/**
 * What a device sends in the handshake (socket.io's `auth`). `lastSeq` is a number or a decimal
 * string: socket.io-client-java takes `auth` as a `Map<String,String>`, so Android sends every value
 * as a string. Anything else counts as no `lastSeq`: the whole inbox is replayed.
 */
export const HandshakeAuthSchema = z.object({
  token: z.string().min(1).describe('The access token, as REST takes it after `Bearer `'),
  lastSeq: z
    .union([Seq, z.string().regex(/^\d{1,16}$/).transform(Number).pipe(Seq)])
    .optional()
    .catch(undefined)
    .describe('The highest `seq` this device processed (0 or absent: none); a number or a decimal string. Events after it are replayed from the inbox'),
});

export const InboxAckSchema = z.object({ seq: z.number().int().positive().max(Number.MAX_SAFE_INTEGER).describe('Every event up to and including this one was processed') });

/** What `inbox.head` acknowledges with: the newest sequence of the device's inbox. */
export const InboxHeadSchema = z.object({ seq: Seq.describe('The newest event the device\'s inbox holds (0: none, all acknowledged or trimmed)') });

export const TypingSchema = z.object({ roomId: z.string().min(1).max(64).describe('A room the user is a member of') });

/** `call.signal` over the socket: the body of POST /api/calls/{callId}/signal, with the call's id. */
export const SocketSignalSchema = z.intersection(z.object({ callId: IdParam }), CallSignalSchema);

/** What the hub answers `call.signal` with: ok, or the coded error REST would give. */
export const SocketAckSchema = z.union([
  z.object({ ok: z.literal(true) }),
  z.object({
    ok: z.literal(false),
    status: z.number().int(),
    code: z.string().describe('A code of the error catalogue (docs/reference/errors.md)'),
    message: z.string(),
    details: z
      .array(z.object({ field: z.string().describe('The path of the field, dotted (payload.type)'), message: z.string() }))
      .optional()
      .describe('VALIDATION_FAILED: one entry per field that failed, as REST error bodies name them'),
  }),
]);

/** What devices send to the hub, each with what its acknowledgement carries (if it takes one). */
export const CLIENT_EVENTS = {
  'inbox.ack': { body: InboxAckSchema, description: 'The device processed every event up to `seq`: the inbox trims them, and they are not replayed' },
  'call.signal': { body: SocketSignalSchema, ack: SocketAckSchema, description: 'Relay an SDP offer/answer or ICE candidate to the other device of the call (as POST /api/calls/{callId}/signal)' },
  'typing.start': { body: TypingSchema, description: 'The user is typing in a room: relayed to the room\'s other members (at most once every 2 s per socket); nothing is stored' },
  'typing.stop': { body: TypingSchema, description: 'The user stopped typing in a room' },
  'inbox.head': {
    body: z.unknown().describe('Anything (ignored)'),
    ack: InboxHeadSchema,
    description: 'Where the device\'s inbox ends: the newest event it holds. Once the device processed `seq` (replayed events come first, in order), or at once when its lastSeq is at or past it, it has caught up',
  },
  'hub.ping': { body: z.unknown().describe('Anything'), ack: z.unknown().describe('The body, echoed'), description: 'Application-level round trip: the acknowledgement echoes the body' },
} as const;

/** The codes of `connect_error`: a refused token, or a dependency away (then `data` says when to try again). */
export const HANDSHAKE_ERRORS = [CommonErrors.UNAUTHORIZED, CommonErrors.DATABASE_UNAVAILABLE, CommonErrors.REDIS_UNAVAILABLE] as const;

/** `message.new` carries the whole message, as GET /api/messages/{roomId} shows it, and its id again as `messageId`. */
const MessageNewSchema = MessageDtoSchema.extend({ messageId: z.string().describe('The same as `id`') }).describe(ROOM_EVENTS['message.new'].description ?? '');

type JsonObject = Record<string, unknown>;

/**
 * A zod schema as an AsyncAPI (JSON Schema draft 7) schema; the schemas it names (`.meta({id})`) go
 * to `shared` and are referred to under components.
 */
function jsonSchema(schema: z.ZodType, shared: JsonObject, io: 'input' | 'output' = 'output'): JsonObject {
  const converted = z.toJSONSchema(schema, { target: 'draft-7', io, unrepresentable: 'any' }) as JsonObject;
  delete converted.$schema;
  const definitions = (converted.definitions ?? {}) as JsonObject;
  delete converted.definitions;
  Object.assign(shared, definitions);
  return converted;
}

/** Points every `#/definitions/X` at `#/components/schemas/X`. */
function rehome(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(rehome);
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, key === '$ref' && typeof inner === 'string' ? inner.replace('#/definitions/', '#/components/schemas/') : rehome(inner)]));
}

const envelopeOf = (data: JsonObject) => ({
  type: 'object',
  properties: {
    seq: { type: 'integer', minimum: 1, description: 'The event\'s place in this device\'s inbox; acknowledge it with inbox.ack, give it as lastSeq when reconnecting' },
    at: { type: 'string', format: 'date-time', description: 'When the event was stored' },
    data,
  },
  required: ['seq', 'at', 'data'],
  additionalProperties: false,
});

export const SOCKET_PROTOCOL_DESCRIPTION = [
  'The socket every phone keeps open to the hub (the realtime role): Socket.IO v4 (Engine.IO protocol 4) over **WebSocket only**; ',
  'long-polling is refused, so a client must ask for the `websocket` transport (socket.io-client-java: `options.transports = new String[]{WebSocket.NAME}`; ',
  'Swift: `.forceWebsockets(true)`; python-socketio: `transports=["websocket"]`). Path `/socket.io/`, default namespace `/`.\n\n',
  'Handshake: `auth` carries `token` (the REST access token) and optionally `lastSeq` (a number or a decimal string). A refused handshake ',
  'answers `connect_error` with the message `UNAUTHORIZED`, or `DATABASE_UNAVAILABLE` / `REDIS_UNAVAILABLE` with `data: {code, retryAfter}` (seconds): ',
  'try again then, and do not sign out.\n\n',
  'Device events (`to-device.*` operations whose message carries `{seq, at, data}`) are stored in the device\'s inbox and replayed after `lastSeq` ',
  'on every connection; acknowledge them with `inbox.ack`. Room broadcasts (`message.new`, `typing.start`, `typing.stop`, ...) are live only: catch up over REST, ',
  'and again on `rooms.resync-required` (the hub\'s feed of broadcasts lapsed and is back).',
].join('');

/** The AsyncAPI 3.1 document of the device socket protocol. */
export function socketProtocolDocument(options: { version: string; host?: string }): JsonObject {
  const shared: JsonObject = {};
  const messages: JsonObject = {};
  const operations: JsonObject = {};
  const channel = { $ref: '#/channels/device' };
  const toDevice = (event: string, payload: JsonObject, summary: string, extra: JsonObject = {}) => {
    messages[event] = { name: event, title: event, summary, payload, ...extra };
    operations[`to-device.${event}`] = { action: 'send', channel, summary, messages: [{ $ref: `#/channels/device/messages/${event}` }] };
  };

  for (const [event, schema] of Object.entries(DEVICE_EVENTS)) {
    toDevice(event, envelopeOf(jsonSchema(schema, shared)), schema.description ?? event, { tags: [{ name: 'device-event' }] });
  }
  for (const [event, schema] of Object.entries(ROOM_EVENTS)) {
    const payload = event === 'message.new' ? MessageNewSchema : schema;
    toDevice(event, jsonSchema(payload, shared), schema.description ?? event, { tags: [{ name: 'room-broadcast' }] });
  }
  for (const [event, schema] of Object.entries(HUB_EVENTS)) {
    toDevice(event, jsonSchema(schema, shared), schema.description ?? event, { tags: [{ name: 'hub' }] });
  }
  const connectError = {
    type: 'object',
    description: 'Socket.IO\'s connect_error: its message is the code; `data` is there while a dependency is away',
    properties: {
      message: { type: 'string', enum: HANDSHAKE_ERRORS.map((error) => error.code) },
      data: { type: 'object', properties: { code: { type: 'string' }, retryAfter: { type: 'integer', minimum: 1, description: 'Seconds to wait before connecting again' } }, required: ['code', 'retryAfter'] },
    },
    required: ['message'],
  };
  toDevice('connect_error', connectError, 'The handshake was refused', { tags: [{ name: 'handshake' }] });

  messages.handshake = { name: 'handshake', title: 'handshake', summary: 'Socket.IO\'s `auth` at the connection', payload: jsonSchema(HandshakeAuthSchema, shared, 'input'), tags: [{ name: 'handshake' }] };
  operations['from-device.connect'] = {
    action: 'receive',
    channel,
    summary: 'A device connects with its token and the last seq it processed',
    messages: [{ $ref: '#/channels/device/messages/handshake' }],
  };
  for (const [event, spec] of Object.entries(CLIENT_EVENTS)) {
    const key = `${event}.from-device`;
    messages[key] = { name: event, title: event, summary: spec.description, payload: jsonSchema(spec.body, shared, 'input'), tags: [{ name: 'client-event' }] };
    const operation: JsonObject = { action: 'receive', channel, summary: spec.description, messages: [{ $ref: `#/channels/device/messages/${key}` }] };
    if ('ack' in spec) {
      messages[`${event}.ack`] = { name: `${event} acknowledgement`, title: `${event} acknowledgement`, summary: 'Socket.IO acknowledgement', payload: jsonSchema(spec.ack, shared), tags: [{ name: 'acknowledgement' }] };
      operation.reply = { channel, messages: [{ $ref: `#/channels/device/messages/${event}.ack` }] };
    }
    operations[`from-device.${event}`] = operation;
  }

  return rehome({
    asyncapi: '3.1.0',
    info: { title: 'Chat platform device socket', version: options.version, description: SOCKET_PROTOCOL_DESCRIPTION },
    defaultContentType: 'application/json',
    servers: {
      hub: { host: options.host ?? '127.0.0.1:8081', protocol: 'ws', pathname: '/socket.io/', description: 'A hub node (SOCKET_PORT), or the front that routes /socket.io/ to the hubs' },
    },
    channels: { device: { address: '/', title: 'The default namespace', description: 'Every event of a device\'s socket goes through the default namespace', messages } },
    operations,
    components: { schemas: shared },
  }) as JsonObject;
}

/** Every event name the document knows, either way. */
export function documentedEvents(): Set<string> {
  return new Set([...Object.keys(DEVICE_EVENTS), ...Object.keys(ROOM_EVENTS), ...Object.keys(HUB_EVENTS), ...Object.keys(CLIENT_EVENTS)]);
}

/** Markers around the device event table of docs/clients/socket-protocol.md (`npm run docs:tables` writes it). */
export const EVENT_TABLE_MARKERS = { start: '<!-- device-event-table:start (npm run docs:tables writes it) -->', end: '<!-- device-event-table:end -->' } as const;

export const ROOM_EVENT_TABLE_MARKERS = { start: '<!-- room-broadcast-table:start (npm run docs:tables writes it) -->', end: '<!-- room-broadcast-table:end -->' } as const;

/** The protocol page's table of room broadcasts and the hub's own notices, from ROOM_EVENTS and HUB_EVENTS. */
export function roomEventTableMarkdown(): string {
  const row = (event: string, schema: z.ZodObject, from: string) => {
    // `message.new` carries the whole MessageDto (the OpenAPI document's), its id again as `messageId`.
    const data = event === 'message.new' ? 'the MessageDto, with `messageId`' : `\`{${fieldsOf(schema)}}\``;
    return `| \`${event}\` | ${from} | ${data} | ${(schema.description ?? '').replaceAll('|', '\\|')} |`;
  };
  return [
    '| event | from | data | what it says |',
    '|---|---|---|---|',
    ...Object.entries(ROOM_EVENTS).map(([event, schema]) => row(event, schema, 'the room')),
    ...Object.entries(HUB_EVENTS).map(([event, schema]) => row(event, schema, 'the hub')),
  ].join('\n');
}

/** A payload's fields as the table shows them: each name, with its values where it is an enumeration. */
function fieldsOf(schema: z.ZodObject): string {
  return Object.entries(schema.shape)
    .map(([name, field]) => {
      const inner = field instanceof z.ZodNullable || field instanceof z.ZodOptional ? field.unwrap() : field;
      return inner instanceof z.ZodEnum ? `${name}: ${inner.options.join(' \\| ')}` : name;
    })
    .join(', ');
}

/** The table of every device event: its fields, what it means, and the push it makes when the device has no socket. */
export function deviceEventTableMarkdown(): string {
  const push = { alert: 'alert', voip: 'VoIP' } as const;
  const rows = Object.entries(DEVICE_EVENTS).map(([event, schema]) => {
    const kind = PUSH_KIND[event as DeviceEventName];
    return `| \`${event}\` | \`{${fieldsOf(schema)}}\` | ${(schema.description ?? '').replaceAll('|', '\\|')} | ${kind ? push[kind] : '—'} |`;
  });
  return ['| event | data | what it says | push when offline |', '|---|---|---|---|', ...rows].join('\n');
}
