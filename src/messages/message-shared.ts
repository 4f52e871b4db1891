import type { Clock } from '../platform/clock.js';
import type { Logger } from '../platform/logger.js';
import { type AfterAnswer } from '../platform/after-answer.js';
import type { z } from 'zod';
import type { DeviceEvents } from '../platform/device-events.js';
import type { GeoLocator } from '../platform/geoip.js';
import { randomFillSync } from 'node:crypto';
import type { GeoLocation, MessageDoc, MessageEditsRepo, MessageRemovalsRepo, MessagesRepo, ReplyExcerpt } from './messages.repo.js';
import type { RoomActivityRepo } from './room-activity.repo.js';
import type { RoomDoc } from '../rooms/index.js';
import type { UserReads } from '../users/index.js';
import { type RoomsPolicy } from '../rooms/index.js';
import type { MessagesPolicy } from './messages.policy.js';
import { MessagesErrors } from './messages.errors.js';
import type { MessageDtoSchema } from './messages.schemas.js';
import type { PostTranslationsSchema } from './messages.schemas.js';
import type { EphemeralStore } from '../platform/ephemeral.js';

/** As the MessageDto record of the OpenAPI document. */
export type MessageView = z.infer<typeof MessageDtoSchema>;

/** As the PostTranslations record of the OpenAPI document. */
export type PostTranslationsView = z.infer<typeof PostTranslationsSchema>;

export interface PostMessageInput {
  roomId: string;
  message: string;
  geoLocation?: GeoLocation | null;
  attachmentIds?: string[] | null;
  /** The phone's id for this message: a resend returns the first one (see store). */
  clientMessageId?: string | null;
  /** A message of the same room this one answers. */
  replyToId?: string | null;
  /** Members it mentions (non-members left out), and whether it mentions the whole room. */
  mentions?: string[] | null;
  mentionsRoom?: boolean | null;
}

/** Who posts, as the request tells: its address (for the message's place), and where work that follows the answer goes. */
export interface PostRequest {
  ip: string;
  afterAnswer?: AfterAnswer;
}

export const MAX_MESSAGE_LENGTH = 10_000;

/** A deletion whose follow-ups are not done this long after it began died midway. */
export const STALLED_REMOVAL_MS = 60_000;

/**
 * A new message id: twelve bytes in hex, shaped like an ObjectId and ordered as one (seconds first,
 * so ids made before this scheme still sort with the new ones), then the millisecond, then six random
 * bytes. An ObjectId ends in a per-process counter, so a neighbour's id gave this one away; 48 random
 * bits do not.
 */
export function newMessageId(now = Date.now()): string {
  const id = Buffer.alloc(12);
  id.writeUInt32BE(Math.floor(now / 1000), 0);
  id.writeUInt16BE(now % 1000, 4);
  randomInto(id, 6, 6);
  return id.toString('hex');
}

/**
 * Random bytes from a pool filled 4 KB at a time (as Node's randomUUID keeps one): a system call per
 * 680 ids, not per id (about 20 µs a post on a virtual machine).
 */
const randomPool = Buffer.alloc(4096);
let randomAt = randomPool.length;
function randomInto(target: Buffer, offset: number, length: number): void {
  if (randomAt + length > randomPool.length) {
    randomFillSync(randomPool);
    randomAt = 0;
  }
  randomPool.copy(target, offset, randomAt, randomAt + length);
  randomAt += length;
}

/** A deleted message's push is replaced when it was posted this recently (older notifications are rarely still shown). */
export const REPLACE_PUSH_WITHIN_MS = 24 * 3_600_000;
/** Read receipts are kept in direct chats and in groups of up to this many members. */
const RECEIPTS_MAX_MEMBERS = 256;
export const keepsReceipts = (room: RoomDoc) => room.type === 'DIRECT' || room.memberCount <= RECEIPTS_MAX_MEMBERS;
/** An encrypted message is base64 (or base64url) of at least a 12-byte nonce and a 16-byte tag. */
const ENCRYPTED = /^[A-Za-z0-9+/_-]{38,}={0,2}$/;

/** A message's reactions as counts, most first, with whether `viewerId` is among them. */
export function reactionCounts(message: Pick<MessageDoc, 'reactions'>, viewerId?: string): { emoji: string; count: number; me: boolean }[] {
  const counts = new Map<string, { count: number; me: boolean }>();
  for (const [userId, emojis] of Object.entries(message.reactions ?? {})) {
    for (const emoji of emojis) {
      const entry = counts.get(emoji) ?? { count: 0, me: false };
      entry.count++;
      if (userId === viewerId) entry.me = true;
      counts.set(emoji, entry);
    }
  }
  return [...counts].map(([emoji, entry]) => ({ emoji, ...entry })).sort((a, b) => b.count - a.count || (a.emoji < b.emoji ? -1 : 1));
}

/** A reaction is one emoji: a single grapheme that is a pictograph (or a flag). */
export function isOneEmoji(text: string): boolean {
  const graphemes = [...new Intl.Segmenter('en', { granularity: 'grapheme' }).segment(text)];
  return graphemes.length === 1 && /\p{Extended_Pictographic}|\p{Regional_Indicator}{2}/u.test(text);
}

export function presentMessage(message: MessageDoc, viewerId?: string): MessageView {
  return {
    id: message._id,
    roomId: message.roomId,
    userId: message.userId,
    message: message.message,
    encrypted: message.encrypted,
    geoLocation: message.geoLocation,
    attachmentIds: message.attachmentIds,
    parentId: message.parentId,
    language: message.language,
    appId: message.appId ?? null,
    card: message.card ?? null,
    replyTo: message.replyTo ?? null,
    mentions: message.mentions ?? [],
    mentionsRoom: message.mentionsRoom === true,
    reactions: reactionCounts(message, viewerId),
    editedAt: message.editedAt?.toISOString() ?? null,
    deleted: Boolean(message.deletedAt),
    createdAt: message.createdAt.toISOString(),
  };
}

/** What a reply shows of the message it answers, as that message stands. */
export function excerptOf(message: MessageDoc): ReplyExcerpt {
  const base = { id: message._id, userId: message.userId };
  if (message.deletedAt) return { ...base, excerpt: null, kind: 'DELETED' };
  if (message.encrypted) return { ...base, excerpt: null, kind: 'ENCRYPTED' };
  if (message.card) return { ...base, excerpt: null, kind: 'CARD' };
  if (message.message.length === 0) return { ...base, excerpt: null, kind: 'ATTACHMENTS' };
  return { ...base, excerpt: [...message.message].slice(0, 100).join(''), kind: 'TEXT' };
}

/**
 * Text as it is stored and shown: Unicode NFC, no control characters but newline and tab, no
 * trailing spaces on lines, at most two blank lines in a row, trimmed.
 */
export function cleanText(text: string): string {
  return text
    .normalize('NFC')
    .replace(/\r\n?/g, '\n')
    // eslint-disable-next-line no-control-regex -- removing control characters is the point here
    .replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u200b\u2028\u2029\ufeff]/g, '')
    .replace(/[ \t]+\n/g, '\n')
    .replace(/\n{4,}/g, '\n\n\n')
    .trim();
}

/**
 * A message's text as it is stored, a post's or an edit's: cleaned (ciphertext in an end-to-end
 * encrypted room, which takes nothing else), bounded, and not empty unless it has attachments.
 */
export function checkedText(room: RoomDoc, given: string, attachmentCount: number): string {
  const encrypted = room.type === 'E2EE';
  const text = encrypted ? given : cleanText(given);
  if (encrypted && !ENCRYPTED.test(text)) throw MessagesErrors.MESSAGE_NOT_ENCRYPTED();
  return bounded(text, attachmentCount);
}

/** A post's text within its bounds: not empty unless the message is only its attachments, at most MAX_MESSAGE_LENGTH. */
function bounded(text: string, attachmentCount: number): string {
  if (text.length === 0 && attachmentCount === 0) throw MessagesErrors.MESSAGE_EMPTY();
  if (text.length > MAX_MESSAGE_LENGTH) throw MessagesErrors.MESSAGE_TOO_LONG({ message: `At most ${MAX_MESSAGE_LENGTH} characters` });
  return text;
}

/** An app's plain text, cleaned and bounded as a member's post is; 400 MESSAGE_EMPTY or MESSAGE_TOO_LONG. */
export function appText(given: string): string {
  return bounded(cleanText(given), 0);
}

/** Encrypted uploads taken by a message of an end-to-end encrypted room (src/e2ee); 400 ATTACHMENT_NOT_FOUND when one cannot be. */
export type ClaimUploads = (input: { roomId: string; uploaderId: string; messageId: string; attachmentIds: string[] }) => Promise<void>;

/** Posting and reading room messages (spec, "Messages", rule 1). */

/** What every messages service is given (the area's factory builds them all from one). */
export interface MessagesDeps {
    rooms: RoomsPolicy;
    policy: MessagesPolicy;
    messages: MessagesRepo;
    activity: RoomActivityRepo;
    events: DeviceEvents;
    geo: GeoLocator;
    users: UserReads;
    supportedLanguages: string[];
    claimUploads: ClaimUploads;
    /** Earlier versions of edited messages. */
    edits: MessageEditsRepo;
    /** A deleted message's files (and thumbnails) removed: a ticket for one stops opening it. */
    removeFiles: (messageId: string) => Promise<void>;
    windows: { editMs: number; deleteMs: number };
    /** Queues the push of a new message to the members who did not get it live (one job per post). */
    enqueuePush: (messageId: string, replacement?: boolean) => Promise<void>;
  /** Queues the push of an edited message to the members it newly mentions (once each). */
  enqueueMentionPush: (messageId: string, mentioned: string[]) => Promise<void>;
    /** Whether a new timeline message may have anyone to push to (no: every device that could be pushed has a live socket, or there is none). */
    mayNeedPush: (roomId: string, authorId: string) => Promise<boolean>;
    clock: Clock;
    logger: Logger;
    /**
     * A message request (a direct chat the other person has not accepted): at most `posts` messages
     * of the sender until they do. `memberCount` reads the room fresh (the posting path's is cached).
     */
    messageRequests: { posts: number; ephemeral: EphemeralStore; slotKey: (roomId: string, userId: string) => string; memberCount: (roomId: string) => Promise<number> };
    /** Deletions for everyone under way, so a crash midway is finished by the minute clean-up. */
    removals: MessageRemovalsRepo;
  }
