import { z } from 'zod';
import { IsoDateTime, UserDtoSchema } from './common.schemas.js';
import { CardSchema } from './cards.schemas.js';

/**
 * What the hub sends to devices, one zod schema per event: the device events (stored in the device's
 * inbox, sent as `{seq, at, data}`) and the room broadcasts (live only). The types the emitters and the
 * hub use are inferred from these (device-events.ts), and the AsyncAPI document of the socket protocol
 * is generated from them (src/socket-protocol.ts), so an event cannot be sent without being documented.
 */

const CallMediaSchema = z.enum(['AUDIO', 'VIDEO']);

const CallEventFields = {
  callId: z.string(),
  callerId: z.string(),
  callerDeviceId: z.string(),
  calleeId: z.string(),
  media: CallMediaSchema,
  state: z.string().describe('The call\'s state after this event (RINGING, ACTIVE, ENDED, …)'),
};

const RoomCallEventFields = {
  callId: z.string(),
  roomId: z.string(),
  startedBy: z.string().describe('The user who started the room call'),
  media: CallMediaSchema,
};

const Money = z.string().describe('A decimal amount, as a string (never a JSON number)');

/** Another user as an event names them: id and display name. */
const UserRef = z.object({ id: z.string(), displayName: z.string().nullable() });

export const DEVICE_EVENTS = {
  'device.added': z.object({ deviceId: z.string(), name: z.string(), platform: z.string() }).describe('Another device signed in to the account'),
  'call.incoming': z.object(CallEventFields).describe('A 1:1 call rings this device (a VoIP push where offline)'),
  'call.answered': z
    .object({ ...CallEventFields, answeredByDeviceId: z.string() })
    .describe('The call was answered; `answeredByDeviceId` says on which device (the others stop ringing)'),
  'call.ended': z
    .object({ ...CallEventFields, endedBy: z.string().nullable(), reason: z.enum(['HANGUP', 'MISSED', 'REJECTED', 'CANCELLED', 'FAILED']) })
    .describe('The call ended'),
  'call.signal': z
    .object({ callId: z.string(), fromDeviceId: z.string(), kind: z.enum(['offer', 'answer', 'candidate']), payload: z.unknown().describe('The SDP or ICE candidate, as the other device sent it') })
    .describe('SDP offer/answer or ICE candidate from the other party\'s device in the call'),
  'room-call.incoming': z.object(RoomCallEventFields).describe('A call started in a room the user is an enabled member of: ring (VoIP push where offline)'),
  'room-call.joined': z.object({ ...RoomCallEventFields, userId: z.string(), deviceId: z.string() }).describe('A device joined the room call; the joiner\'s other devices stop ringing'),
  'room-call.left': z
    .object({ ...RoomCallEventFields, userId: z.string(), deviceId: z.string(), closedProducerIds: z.array(z.string()) })
    .describe('A device left the room call; its media (`closedProducerIds`) is gone'),
  'room-call.ring-stopped': z
    .object({ ...RoomCallEventFields, reason: z.enum(['DECLINED', 'MISSED']) })
    .describe('The user declined on one device, or nobody answered in time: stop ringing'),
  'room-call.media-added': z
    .object({ ...RoomCallEventFields, producerId: z.string(), userId: z.string(), deviceId: z.string(), kind: z.enum(['audio', 'video']) })
    .describe('A participant\'s device sends new media: consume it with POST /api/calls/{callId}/media/transports/{id}/consume'),
  'room-call.ended': z
    .object({ ...RoomCallEventFields, reason: z.enum(['HANGUP', 'MISSED', 'FAILED']) })
    .describe('The room call ended (the last device left, nobody answered, or its media server went away)'),
  'contact.request': z
    .object({ requestId: z.string(), sender: UserDtoSchema, customMessage: z.string() })
    .describe('Someone asks to connect (also after signing up, for invitations sent to the new number)'),
  'contact.accepted': z.object({ requestId: z.string(), user: UserDtoSchema }).describe('A connection request the user sent was accepted'),
  'room.invitation': z
    .object({ roomId: z.string(), roomType: z.string(), roomName: z.string().nullable(), inviter: UserRef })
    .describe('Someone the user is not connected to invites them into a room (a direct chat: a message request). Accept or decline with POST /api/rooms/{roomId}/invitation; until then the user is not a member'),
  'room.notifications-changed': z
    .object({ roomId: z.string(), level: z.enum(['ALL', 'MENTIONS', 'NONE']), mutedUntil: IsoDateTime.nullable(), levelNow: z.enum(['ALL', 'MENTIONS', 'NONE']) })
    .describe('The user changed how loud a room is on another of their devices (or muted or unmuted it): show the same'),
  'room.invitation-accepted': z.object({ roomId: z.string(), user: UserRef }).describe('A user the caller invited accepted and is now a member of the room'),
  'wallet.transfer-received': z
    .object({ entryId: z.string(), fromUserId: z.string(), walletId: z.string(), currency: z.string(), amount: Money })
    .describe('Money arrived in one of the user\'s wallets from another member'),
  'wallet.payment-requested': z
    .object({ paymentRequestId: z.string(), requesterId: z.string(), currency: z.string(), amount: Money, note: z.string().nullable() })
    .describe('Someone asks the user to pay (a payment request item)'),
  'wallet.payment-request-paid': z
    .object({ paymentRequestId: z.string(), payerId: z.string(), amount: Money, currency: z.string(), status: z.string() })
    .describe('A recipient paid their item of the user\'s payment request'),
  'wallet.limit-request-decided': z
    .object({ requestId: z.string(), status: z.enum(['APPROVED', 'REFUSED']), tier: z.string().nullable(), noLimit: z.boolean(), effectiveUntil: IsoDateTime.nullable() })
    .describe('A site administrator decided the user\'s sending-limit request'),
  'app.follow-up': z
    .object({
      appId: z.string(),
      invocationId: z.string().describe('The invocation the app answered late (its reply was `deferred`)'),
      outcome: z.enum(['card', 'ack', 'error']),
      card: CardSchema.nullable().describe('outcome card: a card for this member alone'),
      message: z.string().nullable().describe('outcome ack: the notice'),
      userMessage: z.string().nullable().describe('outcome error: the app\'s message, shown as is'),
    })
    .describe('An app answered an invocation of the user\'s that it had deferred: show it where the invocation was (a card for the room is posted into the room instead)'),
  'wallet.app-money-received': z
    .object({
      appId: z.string(),
      appName: z.string(),
      kind: z.enum(['REFUND', 'PAYOUT']),
      paymentId: z.string().nullable().describe('The payment refunded (REFUND); null for a payout'),
      walletId: z.string().nullable().describe('The wallet credited; null for test money (nothing moved)'),
      currency: z.string(),
      amount: Money,
      test: z.boolean().describe('Test money from an app in test mode: no wallet changed; show it marked as a test'),
    })
    .describe('An app refunded one of the user\'s payments to it, or paid the user out, into one of their wallets (or, `test`, pretended to)'),
  'wallet.deposit-received': z.object({ walletId: z.string(), currency: z.string(), amount: Money, txHash: z.string() }).describe('A deposit to the wallet\'s address on chain was credited'),
  'wallet.withdrawal-updated': z
    .object({ withdrawalId: z.string(), walletId: z.string(), status: z.string().describe('pending, sent, confirmed, refused or refunded'), txHash: z.string().nullable() })
    .describe('A withdrawal moved on: `pending`, `sent` (with its transaction), `confirmed`, `refused` or `refunded`'),
  'device.biometric-key-removed': z.object({ deviceId: z.string(), name: z.string() }).describe('A device of the account removed its biometric key'),
  'attachment.progress': z
    .object({ attachmentId: z.string(), messageId: z.string(), roomId: z.string(), percent: z.number().int().min(0).max(100), state: z.enum(['PROCESSING', 'READY']) })
    .describe('Processing of an uploaded file moved on; `state` READY with 100 when done'),
  'attachment.failed': z
    .object({ attachmentId: z.string(), messageId: z.string(), roomId: z.string(), reason: z.string() })
    .describe('An uploaded file could not be processed (not a readable image or video)'),
  'chat.tldr-ready': z
    .object({
      requestId: z.string(),
      roomId: z.string(),
      messageId: z.string(),
      summary: z.string(),
      language: z.string().describe('Language of the summary ("und" when the summarizer kept the conversation\'s own)'),
      requestedLanguage: z.string(),
      messageCount: z.number().int(),
    })
    .describe('A summary asked for with POST /api/messages/{messageId}/tldr is ready'),
  'e2ee.device-added': z
    .object({ roomId: z.string(), userId: z.string(), deviceId: z.string(), encryptionKey: z.string(), signingKey: z.string() })
    .describe('A device of a member of an end-to-end encrypted room registered its identity keys: it may now receive the room\'s keys'),
  'e2ee.key-requested': z
    .object({ roomId: z.string(), version: z.number().int(), requestId: z.string(), deviceId: z.string() })
    .describe('A device of the room lacks a key version: a device holding it answers with POST /api/e2ee/rooms/{roomId}/keys'),
  'e2ee.key-request-answered': z
    .object({ roomId: z.string(), version: z.number().int(), requestId: z.string() })
    .describe('Takes the place of a key request in inboxes once it was answered: nothing to do'),
  'e2ee.rotation-due': z
    .object({ roomId: z.string(), reason: z.enum(['MEMBER_LEFT', 'DEVICE_REVOKED', 'DEVICE_ADDED']) })
    .describe('The set of devices that may hold the room\'s key changed: the next message should go under a new key version'),
  'account.export-ready': z
    .object({ exportId: z.string(), url: z.string().describe('Opens the archive, without the Authorization header, for a few minutes'), expiresAt: IsoDateTime })
    .describe('The data export asked for with POST /api/users/me/export is ready: a ZIP of JSON files (a fresh link: GET /api/users/me/exports/{exportId})'),
  'message.reaction': z
    .object({ roomId: z.string(), messageId: z.string(), userId: z.string().describe('Who reacted'), emoji: z.string() })
    .describe('Someone reacted to the user\'s message (an alert push when offline, one per message: collapsed)'),
  'report.decided': z
    .object({
      reportId: z.string(),
      targetType: z.enum(['MESSAGE', 'USER', 'ROOM', 'APP']),
      targetId: z.string(),
      outcome: z.enum(['DISMISSED', 'MESSAGE_REMOVED', 'USER_SUSPENDED', 'APP_UNLISTED']),
    })
    .describe('A site administrator decided a report the user made: what was done'),
  'inbox.resync-required': z
    .object({ lastSeq: z.number().int(), reason: z.enum(['INBOX_BOUND', 'INBOX_RESET']) })
    .describe('The device fell past the inbox bound (INBOX_BOUND), or its lastSeq is past the inbox\'s end (INBOX_RESET): refetch state over REST, then continue from `seq`'),
} as const;

/**
 * Room broadcasts. `message.new` carries the whole message (the MessageDto of the OpenAPI document)
 * and its id again as `messageId`; the messages area makes it, so the platform types only the fields
 * every sender must give and the protocol document shows the rest (src/socket-protocol.ts).
 */
export const ROOM_EVENTS = {
  'message.new': z.looseObject({ roomId: z.string(), messageId: z.string() }).describe('A message was posted in one of the user\'s rooms (also comments, with `parentId`)'),
  'message.edited': z
    .object({ roomId: z.string(), messageId: z.string(), message: z.string().describe('The new text (ciphertext in an end-to-end encrypted room)'), editedAt: IsoDateTime })
    .describe('A message of the room was edited by its author (nothing is pushed)'),
  'message.card-updated': z
    .object({ roomId: z.string(), messageId: z.string(), card: CardSchema.describe('The card the message shows now'), editedAt: IsoDateTime })
    .describe('An app replaced the card of one of its messages (its answer to a press of one of the card\'s buttons; nothing is pushed)'),
  'message.deleted': z.object({ roomId: z.string(), messageId: z.string() }).describe('A message of the room was deleted for everyone: show a tombstone'),
  'message.reactions': z
    .object({ roomId: z.string(), messageId: z.string(), reactions: z.array(z.object({ emoji: z.string(), count: z.number().int() })).describe('Every reaction\'s count now, most first') })
    .describe('A message\'s reactions changed'),
  'room.read': z
    .object({ roomId: z.string(), userId: z.string(), messageId: z.string().describe('The member read up to this message of the timeline'), at: IsoDateTime })
    .describe('A member read the room up to a message (read receipts: direct chats and groups of up to 256 members; not sent by, nor to, members with read receipts off)'),
  'typing.start': z.object({ roomId: z.string(), userId: z.string() }).describe('A member started typing in the room (relayed by the hub, rate-limited, never stored)'),
  'typing.stop': z.object({ roomId: z.string(), userId: z.string() }).describe('A member stopped typing in the room'),
} as const;

/** What the hub itself tells a socket (neither stored nor broadcast by a room). */
export const HUB_EVENTS = {
  'rooms.resync-required': z
    .object({ reason: z.enum(['BROADCASTS_LAPSED']), since: IsoDateTime.describe('When the hub lost its feed of room broadcasts') })
    .describe('The hub\'s feed of room broadcasts lapsed (a Redis restart or failover) and is back: broadcasts sent since `since` may not have arrived, so refetch the open rooms\' messages over REST (`after` the newest shown)'),
  'hub.draining': z
    .object({ reason: z.enum(['SHUTDOWN']) })
    .describe('This hub node is stopping (a rolling restart): its connection closes right after, as a transport close, and the client reconnects at once (through the front, to another node) with its `lastSeq`; nothing is lost'),
} as const;
