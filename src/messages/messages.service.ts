import type { Clock } from '../platform/clock.js';
import type { Logger } from '../platform/logger.js';
import { nextTurn, type AfterAnswer } from '../platform/after-answer.js';
import { must } from '../platform/must.js';
import type { z } from 'zod';
import type { Card } from '../platform/cards.schemas.js';
import { isDuplicateKey } from '../platform/mongo.js';
import type { Principal } from '../platform/principal.js';
import { TtlCache } from '../platform/cache/ttl-cache.js';
import type { DeviceEvents } from '../platform/device-events.js';
import type { GeoLocator } from '../platform/geoip.js';
import { randomFillSync, randomUUID } from 'node:crypto';
import type { GeoLocation, MessageDoc, MessageEditsRepo, MessageRemovalsRepo, MessagesRepo, ReplyExcerpt } from './messages.repo.js';
import { ownClientKey } from './messages.repo.js';
import type { RoomActivityRepo } from './room-activity.repo.js';
import type { RoomDoc } from '../rooms/index.js';
import type { UserReads } from '../users/index.js';
import { assertTranslatable, type RoomsPolicy } from '../rooms/index.js';
import type { MessagesPolicy } from './messages.policy.js';
import { MessagesErrors } from './messages.errors.js';
import type { MessageDtoSchema } from './messages.schemas.js';
import type { PostTranslationsSchema } from './messages.schemas.js';
import type { EphemeralStore } from '../platform/ephemeral.js';
import { withinLimit } from '../platform/limits.js';

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
}

/** Who posts, as the request tells: its address (for the message's place), and where work that follows the answer goes. */
export interface PostRequest {
  ip: string;
  afterAnswer?: AfterAnswer;
}

export const MAX_MESSAGE_LENGTH = 10_000;

/** A deletion whose follow-ups are not done this long after it began died midway. */
const STALLED_REMOVAL_MS = 60_000;

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
const REPLACE_PUSH_WITHIN_MS = 24 * 3_600_000;
/** Read receipts are kept in direct chats and in groups of up to this many members. */
const RECEIPTS_MAX_MEMBERS = 256;
const keepsReceipts = (room: RoomDoc) => room.type === 'DIRECT' || room.memberCount <= RECEIPTS_MAX_MEMBERS;
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
function checkedText(room: RoomDoc, given: string, attachmentCount: number): string {
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
export class MessagesService {
  /**
   * Authors' languages (the original language of what they post), kept 10 s: a language change
   * labels posts from then on, at most 10 s late, and posting saves a database round trip.
   */
  private readonly authorLanguages = new TtlCache<string>(10_000);

  constructor(
    private readonly deps: {
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
    },
  ) {}

  /**
   * Rule 1: an enabled member; in a broadcast room, or where participants may not publish, only the
   * creator or an admin (or a participant the publish switch allowed); the body's roomId equals the
   * path; an end-to-end encrypted room takes only an encrypted message. A block ends a direct chat.
   */
  async post(principal: Principal, roomId: string, input: PostMessageInput, request: PostRequest = { ip: '' }): Promise<MessageView> {
    if (input.roomId !== roomId) throw MessagesErrors.ROOM_ID_MISMATCH();
    const room = await this.deps.rooms.mayPost(principal, roomId);
    // Attachment ids come with a message only in end-to-end encrypted rooms: the author's encrypted uploads.
    const attachmentIds = input.attachmentIds ?? [];
    if (attachmentIds.length > 0 && room.type !== 'E2EE') throw MessagesErrors.ATTACHMENT_NOT_FOUND();
    const store = () => this.store(principal, room, null, input, request, attachmentIds, attachmentIds.length > 0);
    // A direct chat of one member is a message request not yet accepted: a stranger says a few words, not a flood.
    if (room.type === 'DIRECT' && room.memberCount < 2) return this.withinMessageRequest(principal, room._id, store);
    return store();
  }

  private withinMessageRequest<T>(principal: Principal, roomId: string, act: () => Promise<T>): Promise<T> {
    const { posts, ephemeral, slotKey, memberCount } = this.deps.messageRequests;
    return withinLimit(
      ephemeral,
      slotKey(roomId, principal.userId),
      {
        limit: posts,
        // Accepted meanwhile (the cached room lagging behind): no limit.
        settled: async () => ((await memberCount(roomId)) >= 2 ? 0 : this.deps.messages.countByAuthor(roomId, principal.userId)),
        refuse: () => MessagesErrors.MESSAGE_REQUEST_LIMIT({ message: `At most ${posts} messages go with a message request; more once the other person accepts it`, retryAfter: 3_600 }),
      },
      act,
    );
  }

  /** Posts the message an upload's files attach to (spec, rule 4): the payload, or an empty text. */
  async postForAttachments(principal: Principal, room: RoomDoc, input: PostMessageInput | undefined, attachmentIds: string[], request: PostRequest): Promise<MessageView> {
    if (input && input.roomId !== room._id) throw MessagesErrors.ROOM_ID_MISMATCH({ message: 'The payload\'s roomId must equal the path\'s' });
    if ((input?.attachmentIds ?? []).length > 0) throw MessagesErrors.ATTACHMENT_NOT_FOUND();
    return this.store(principal, room, null, input ?? { roomId: room._id, message: '' }, request, attachmentIds);
  }

  /**
   * A card an app posts into a room it was added to (an invocation's reply, or the bot interface): a
   * message of the room's timeline whose author is `app:<appId>`, broadcast like any other.
   */
  async postAppCard(roomId: string, appId: string, card: Card): Promise<MessageView> {
    return this.postAsApp(roomId, appId, { message: '', card });
  }

  /**
   * An app replaces the card of one of its messages (its answer to a press of one of the card's
   * buttons): members' sockets get `message.card-updated`; nothing is pushed. False when the message
   * is not that app's card, or was deleted.
   */
  async updateAppCard(messageId: string, appId: string, card: Card): Promise<boolean> {
    const now = this.deps.clock();
    const updated = await this.deps.messages.replaceCard(messageId, appId, card, now);
    if (!updated) return false;
    await this.deps.events.toRoom(updated.roomId, 'message.card-updated', { roomId: updated.roomId, messageId, card, editedAt: now.toISOString() });
    return true;
  }

  /** A plain text an app posts through the bot interface: cleaned and bounded as a member's post. */
  async postAppText(roomId: string, appId: string, text: string): Promise<MessageView> {
    return this.postAsApp(roomId, appId, { message: appText(text) });
  }

  private async postAsApp(roomId: string, appId: string, content: { message: string; card?: Card }): Promise<MessageView> {
    const id = newMessageId();
    const doc: MessageDoc = {
      _id: id,
      roomId,
      clientKey: ownClientKey(roomId, id),
      userId: `app:${appId}`,
      message: content.message,
      encrypted: false,
      geoLocation: null,
      attachmentIds: [],
      parentId: null,
      language: 'und',
      translations: {},
      appId,
      ...(content.card ? { card: content.card } : {}),
      createdAt: this.deps.clock(),
    };
    await this.append(doc, () => this.deps.messages.insert(doc));
    return this.announce(doc);
  }

  /** A comment on a message, where the room has comments enabled; any enabled member may comment. */
  async comment(principal: Principal, messageId: string, input: { message: string }, request: { ip: string } = { ip: '' }): Promise<MessageView> {
    const { message: parent, room } = await this.deps.policy.forEnabledMember(principal, messageId, { postOnly: true });
    if (!room.commentsEnabled) throw MessagesErrors.COMMENTS_DISABLED();
    return this.store(principal, room, parent._id, { roomId: room._id, message: input.message }, request, []);
  }

  private async store(
    principal: Principal,
    room: RoomDoc,
    parentId: string | null,
    input: PostMessageInput,
    request: PostRequest,
    attachmentIds: string[],
    /** The ids are encrypted uploads the message takes (each once) before it is stored. */
    claimUploads = false,
  ): Promise<MessageView> {
    const encrypted = room.type === 'E2EE';
    const text = checkedText(room, input.message, attachmentIds.length);
    // A resend (the phone never heard the answer) meets the first send in the unique index (see below).
    const clientKey = input.clientMessageId && parentId === null && !claimUploads ? `${room._id}:${principal.userId}:${input.clientMessageId}` : undefined;

    const replyTo = input.replyToId ? await this.replyExcerpt(room._id, input.replyToId, principal.userId) : null;
    const language = await this.authorLanguages.get(principal.userId, async () => (await this.deps.users.findById(principal.userId))?.language ?? 'en');
    const id = newMessageId();
    const doc: MessageDoc = {
      _id: id,
      roomId: room._id,
      clientKey: clientKey ?? ownClientKey(room._id, id),
      userId: principal.userId,
      message: text,
      encrypted,
      // Derived from the request's address when the client sent none (spec, ChatMessage); never in E2EE rooms.
      geoLocation: input.geoLocation ?? (encrypted ? null : this.deps.geo.locate(request.ip)),
      attachmentIds,
      parentId,
      language,
      translations: {},
      ...(replyTo ? { replyTo } : {}),
      createdAt: this.deps.clock(),
    };
    if (claimUploads) await this.deps.claimUploads({ roomId: room._id, uploaderId: principal.userId, messageId: doc._id, attachmentIds });
    const stored = async () => {
      try {
        await this.deps.messages.insert(doc);
        return null;
      } catch (error) {
        // A resend of a stored message (the phone never heard the answer): the first send's message.
        const earlier = clientKey && isDuplicateKey(error) ? await this.deps.messages.findByClientKey(room._id, clientKey) : null;
        if (!earlier) throw error;
        return earlier;
      }
    };
    // A comment is not on the room's timeline: no number, not the chat list's newest message.
    if (parentId !== null) {
      const earlier = await stored();
      return earlier ? presentMessage(earlier) : this.announce(doc);
    }
    const earlier = await this.append(doc, stored);
    if (earlier) return presentMessage(earlier);
    this.markAuthorRead(doc, request.afterAnswer ?? nextTurn);
    return this.announce(doc);
  }

  /**
   * The author has read what they wrote, and everything before it. Marked after the answer, not on
   * the request path (where a post is its number and its insert), and together with other authors'
   * marks of the next moment (`markAuthorRead`): meanwhile the chat list and the badges count the
   * newest message's author as having read it all (`unreadCount`). A mark lost to a crash in between
   * leaves the author's own post unread once someone posts after it.
   */
  private markAuthorRead(doc: MessageDoc, afterAnswer: AfterAnswer): void {
    const seq = must(doc.seq, 'the number append gave the message');
    afterAnswer(() => {
      this.deps.activity.markAuthorRead(doc.roomId, doc.userId, seq).catch((error: unknown) => this.deps.logger.warn({ err: error, roomId: doc.roomId }, 'an author\'s read mark was not written'));
    });
  }

  /**
   * Puts a timeline message on the room's timeline: its number and the chat list's newest message in
   * one update, then `store`. When `store` fails, or finds the message stored already (what it
   * answers), the newest message before is put back.
   */
  private async append<T>(doc: MessageDoc, store: () => Promise<T | null | void>): Promise<T | null> {
    const last = { id: doc._id, userId: doc.userId, message: doc.message, encrypted: doc.encrypted, attachmentCount: doc.attachmentIds.length, createdAt: doc.createdAt };
    const { seq, previous } = await this.deps.activity.append(doc.roomId, last);
    doc.seq = seq;
    const outcome = await store().then((found) => ({ found: found ?? null, error: null }), (error: unknown) => ({ found: null, error }));
    if (outcome.error === null && outcome.found === null) return null;
    await this.deps.activity.unappend(doc.roomId, doc._id, previous);
    if (outcome.error !== null) throw outcome.error;
    return outcome.found;
  }

  /**
   * A new message told: live, one broadcast to the room's socket.io room on every node (devices catch
   * up by reading); to members without a live socket, by the push its queued job fans out. No job
   * when nobody could be pushed (mayNeedPush); a comment, pushed to its parent's author alone, always
   * gets one.
   */
  private async announce(doc: MessageDoc): Promise<MessageView> {
    const view = presentMessage(doc);
    const push = async () => {
      if (doc.parentId !== null || (await this.deps.mayNeedPush(doc.roomId, doc.userId))) await this.deps.enqueuePush(doc._id);
    };
    // Both before the answer: the author's next post cannot overtake this one's broadcast (a failover delays a publish).
    await Promise.all([this.deps.events.toRoom(doc.roomId, 'message.new', { ...view, messageId: view.id }), push()]);
    return view;
  }

  /**
   * Rule 2: a language version of a broadcast post, by the room's creator or an admin, or a site
   * administrator; only a supported language other than the original; cleaned like a post; an
   * empty text removes it. Nothing is pushed or emitted.
   */
  async translate(principal: Principal, messageId: string, language: string, text: string): Promise<PostTranslationsView> {
    const { message, room } = await this.deps.policy.withRoom(messageId, { postOnly: true });
    if (room.type !== 'BROADCAST') throw MessagesErrors.NOT_A_BROADCAST_POST();
    if (!(await this.deps.rooms.mayTranslate(principal, room))) throw MessagesErrors.TRANSLATION_NOT_ALLOWED();
    assertTranslatable(language, message.language, this.deps.supportedLanguages, 'post');
    const cleaned = cleanText(text);
    if (cleaned.length > MAX_MESSAGE_LENGTH) throw MessagesErrors.MESSAGE_TOO_LONG({ message: `At most ${MAX_MESSAGE_LENGTH} characters` });
    const updated = await this.deps.messages.setTranslation(message._id, language, cleaned.length === 0 ? null : cleaned);
    const current = updated ?? message;
    return { messageId: current._id, originalLanguage: current.language, translations: { ...current.translations, [current.language]: current.message } };
  }

  /**
   * Moves the caller's read mark in a room forward: to `messageId` (a message of the room's
   * timeline), or to its newest message. Active members only; the mark never moves back.
   */
  async markRead(principal: Principal, roomId: string, input: { messageId?: string }): Promise<void> {
    await this.deps.rooms.activeMember(roomId, principal.userId);
    let seq: number;
    let messageId: string | null;
    if (input.messageId) {
      const message = await this.deps.messages.findById(input.messageId);
      if (!message || message.roomId !== roomId || message.parentId !== null) throw MessagesErrors.MESSAGE_NOT_FOUND({ message: 'No such message in this room\'s timeline' });
      seq = message.seq ?? 0;
      messageId = message._id;
    } else {
      const newest = await this.deps.activity.countAndNewest(roomId);
      seq = newest.count;
      messageId = newest.newestId;
    }
    const at = this.deps.clock();
    await this.deps.activity.markRead(roomId, principal.userId, seq, at);
    if (messageId) await this.sendReceipt(principal.userId, roomId, messageId, at);
  }


  /**
   * Tells the room's other members' sockets who read up to which message (`room.read`), unless the
   * reader has read receipts off; members with them off are not told either.
   */
  private async sendReceipt(userId: string, roomId: string, messageId: string, at: Date): Promise<void> {
    if (!keepsReceipts(await this.deps.rooms.room(roomId))) return;
    const memberIds = await this.deps.rooms.activeMemberIds(roomId);
    const members = await this.deps.users.findManyByIds(memberIds);
    if (members.find((member) => member._id === userId)?.readReceipts === false) return;
    const receiptsOff = members.filter((member) => member.readReceipts === false).map((member) => member._id);
    await this.deps.events.toRoom(roomId, 'room.read', { roomId, userId, messageId, at: at.toISOString() }, { exceptUserIds: [userId, ...receiptsOff] });
  }

  /** Who has read a message, and when: for its author, with read receipts on, in a room that keeps them. */
  async readers(principal: Principal, messageId: string): Promise<{ messageId: string; readers: { userId: string; readAt: string | null }[] }> {
    const { message, room } = await this.deps.policy.forReader(principal, messageId);
    if (message.userId !== principal.userId || message.parentId !== null || message.seq === undefined || !keepsReceipts(room)) throw MessagesErrors.READ_RECEIPTS_NOT_HERE();
    const marks = (await this.deps.activity.readersFrom(room._id, message.seq)).filter((mark) => mark.userId !== principal.userId);
    const users = new Map((await this.deps.users.findManyByIds([principal.userId, ...marks.map((mark) => mark.userId)])).map((user) => [user._id, user]));
    if (users.get(principal.userId)?.readReceipts === false) throw MessagesErrors.READ_RECEIPTS_OFF();
    return {
      messageId,
      readers: marks.filter((mark) => users.get(mark.userId)?.readReceipts !== false).map((mark) => ({ userId: mark.userId, readAt: mark.at?.toISOString() ?? null })),
    };
  }

  /**
   * A page of a room's messages, newest first. `before` pages back in history; `after` returns the
   * messages right after a cursor (to catch up after being offline), continuing with the newest id.
   */
  async read(principal: Principal, roomId: string, input: { before?: string; after?: string; limit: number }): Promise<{ items: MessageView[]; hasMore: boolean }> {
    await this.deps.rooms.mayRead(principal, roomId);
    return this.page(roomId, null, input, principal.userId);
  }

  /** A message's comments, newest first, with the same cursors as the room timeline. */
  async readComments(principal: Principal, messageId: string, input: { before?: string; after?: string; limit: number }): Promise<{ items: MessageView[]; hasMore: boolean }> {
    const { message: parent, room } = await this.deps.policy.forReader(principal, messageId);
    return this.page(room._id, parent._id, input, principal.userId);
  }

  private async page(roomId: string, parentId: string | null, input: { before?: string; after?: string; limit: number }, viewerId: string) {
    if (input.before && input.after) throw MessagesErrors.CURSOR_CONFLICT();
    const rows = input.after
      ? (await this.deps.messages.after(roomId, parentId, input.after, input.limit + 1, viewerId)).reverse()
      : await this.deps.messages.before(roomId, parentId, input.before ?? null, input.limit + 1, viewerId);
    const hasMore = rows.length > input.limit;
    const items = input.after ? rows.slice(rows.length - Math.min(rows.length, input.limit)) : rows.slice(0, input.limit);
    return { items: items.map((item) => presentMessage(item, viewerId)), hasMore };
  }

  /** The excerpt a reply carries: a message of the same room the author may read (not hidden for them), else 400. */
  private async replyExcerpt(roomId: string, replyToId: string, authorId: string): Promise<ReplyExcerpt> {
    const original = await this.deps.messages.findById(replyToId);
    if (!original || original.roomId !== roomId || original.hiddenFor?.includes(authorId)) throw MessagesErrors.REPLY_TO_NOT_FOUND();
    return excerptOf(original);
  }

  /**
   * The author edits their message within MESSAGE_EDIT_WINDOW: cleaned as a post is (ciphertext in an
   * end-to-end encrypted room), the text before kept as an earlier version, the translations of a
   * broadcast post dropped (they translated the old text: the managers translate again), the replies'
   * excerpts and the chat list's preview made anew. Members' sockets get `message.edited`; nothing is pushed.
   */
  async edit(principal: Principal, messageId: string, input: { message: string }): Promise<MessageView> {
    const { message, room } = await this.deps.policy.forEnabledMember(principal, messageId);
    if (message.userId !== principal.userId || message.appId) throw MessagesErrors.EDIT_NOT_ALLOWED();
    if (message.deletedAt) throw MessagesErrors.MESSAGE_DELETED();
    const now = this.deps.clock();
    if (now.getTime() - message.createdAt.getTime() > this.deps.windows.editMs) throw MessagesErrors.EDIT_WINDOW_PASSED();
    const text = checkedText(room, input.message, message.attachmentIds.length);
    const before = await this.deps.messages.edit(messageId, text, now);
    if (!before) throw MessagesErrors.MESSAGE_DELETED();
    await this.deps.edits.insert({ _id: randomUUID(), messageId, message: before.message, since: before.editedAt ?? before.createdAt, replacedAt: now });
    const edited: MessageDoc = { ...before, message: text, editedAt: now, translations: {} };
    await this.deps.messages.updateReplies(messageId, excerptOf(edited));
    if (message.parentId === null) await this.deps.activity.replaceLast(room._id, messageId, text);
    await this.deps.events.toRoom(room._id, 'message.edited', { roomId: room._id, messageId, message: text, editedAt: now.toISOString() });
    return presentMessage(edited);
  }

  /** A message's versions, oldest first, for those who may read it. */
  async versions(principal: Principal, messageId: string): Promise<{ messageId: string; versions: { message: string; since: string; replacedAt: string | null }[] }> {
    const { message } = await this.deps.policy.forReader(principal, messageId);
    const earlier = message.deletedAt ? [] : await this.deps.edits.of(messageId);
    return {
      messageId,
      versions: [
        ...earlier.map((v) => ({ message: v.message, since: v.since.toISOString(), replacedAt: v.replacedAt.toISOString() })),
        { message: message.message, since: (message.editedAt ?? message.createdAt).toISOString(), replacedAt: null },
      ],
    };
  }

  /**
   * Deletes a message for everyone: its author within MESSAGE_DELETE_WINDOW, the room's creator or an
   * admin, or a site administrator, at any time. Or, with `scope` me, hides it for the caller only.
   */
  async delete(principal: Principal, messageId: string, scope: 'everyone' | 'me'): Promise<void> {
    const { message, room } = await this.deps.policy.forReader(principal, messageId);
    if (scope === 'me') return this.deps.messages.hideFor(messageId, principal.userId);
    const own = message.userId === principal.userId && this.deps.clock().getTime() - message.createdAt.getTime() <= this.deps.windows.deleteMs;
    if (!own && !(await this.deps.rooms.mayRemoveMessages(principal, room))) throw MessagesErrors.DELETE_NOT_ALLOWED();
    if (!(await this.removeForEveryone(messageId))) throw MessagesErrors.MESSAGE_DELETED();
  }

  /**
   * The one way a message is deleted for everyone (its author, a manager, moderation): a tombstone,
   * its files and earlier versions gone, replies' excerpts and the chat list's preview made anew, the
   * members' sockets told `message.deleted`. False when there was nothing to delete.
   */
  async removeForEveryone(messageId: string): Promise<boolean> {
    const { removals } = this.deps;
    const unfinished = await removals.pending(messageId);
    await removals.begin(messageId, this.deps.clock());
    const before = await this.deps.messages.tombstone(messageId, this.deps.clock());
    if (!before) {
      // Deleted already: by a deletion that died midway (its row was there), which this one finishes;
      // or long ago (then the row just made is taken back).
      const tombstone = unfinished ? await this.deps.messages.findById(messageId) : null;
      if (tombstone?.deletedAt) await this.finishRemoval(tombstone);
      else await removals.done(messageId);
      return false;
    }
    await this.finishRemoval(before);
    return true;
  }

  /**
   * Every follow-up of a deletion, each of which may run again: the files, the earlier versions, the
   * replies' excerpts, the chat list's preview and unread counts, the broadcast, the replacement push.
   */
  private async finishRemoval(before: MessageDoc): Promise<void> {
    const messageId = before._id;
    await this.deps.removeFiles(messageId);
    await this.deps.edits.removeOf(messageId);
    await this.deps.messages.updateReplies(messageId, { id: messageId, userId: before.userId, excerpt: null, kind: 'DELETED' });
    if (before.parentId === null) {
      await this.deps.activity.replaceLast(before.roomId, messageId, '');
      // Unread counts and badges stop counting it.
      if (before.seq !== undefined) await this.deps.activity.noteDeleted(before.roomId, before.seq);
    }
    await this.deps.events.toRoom(before.roomId, 'message.deleted', { roomId: before.roomId, messageId });
    // A push shown for it in the last day is replaced (same collapse key: the room) by one saying it was deleted.
    if (this.deps.clock().getTime() - before.createdAt.getTime() < REPLACE_PUSH_WITHIN_MS) await this.deps.enqueuePush(messageId, true);
    await this.deps.removals.done(messageId);
  }

  /** Deletions a dead process left midway (tombstone written, follow-ups not all done), finished; how many. */
  async finishStalledRemovals(now: Date): Promise<number> {
    const stalled = await this.deps.removals.stalled(new Date(now.getTime() - STALLED_REMOVAL_MS), 100);
    for (const messageId of stalled) {
      const message = await this.deps.messages.findById(messageId);
      if (message?.deletedAt) await this.finishRemoval(message);
      // Gone, or not a tombstone (the process died before writing it: the member's retry deletes it).
      else await this.deps.removals.done(messageId);
    }
    return stalled.length;
  }

  /**
   * A member who may read the message reacts with one emoji (at most 3 different ones per message;
   * a broadcast room's followers too, unless its admins turned reactions off). Members' sockets get
   * `message.reactions` with the new counts; the author (not for their own reaction) gets
   * `message.reaction`, pushed when offline, one push per message (collapsed).
   */
  async react(principal: Principal, messageId: string, emoji: string): Promise<void> {
    const { message, room } = await this.readableForReactions(principal, messageId, emoji);
    if (message.reactions?.[principal.userId]?.includes(emoji)) return;
    const after = await this.deps.messages.react(messageId, principal.userId, emoji);
    if (!after) {
      const now = await this.deps.messages.findById(messageId);
      if (!now || now.deletedAt) throw MessagesErrors.MESSAGE_DELETED();
      if (now.reactions?.[principal.userId]?.includes(emoji)) return;
      throw MessagesErrors.TOO_MANY_REACTIONS();
    }
    await this.tellReactions(room._id, after);
    if (message.userId !== principal.userId && !message.appId) {
      await this.deps.events.toUsers([message.userId], 'message.reaction', { roomId: room._id, messageId, userId: principal.userId, emoji });
    }
  }

  async unreact(principal: Principal, messageId: string, emoji: string): Promise<void> {
    const { room } = await this.readableForReactions(principal, messageId, emoji);
    const after = await this.deps.messages.unreact(messageId, principal.userId, emoji);
    if (!after) throw MessagesErrors.MESSAGE_DELETED();
    await this.tellReactions(room._id, after);
  }

  private async readableForReactions(principal: Principal, messageId: string, emoji: string): Promise<{ message: MessageDoc; room: RoomDoc }> {
    if (!isOneEmoji(emoji)) throw MessagesErrors.EMOJI_INVALID();
    const found = await this.deps.policy.forReader(principal, messageId);
    if (found.message.deletedAt) throw MessagesErrors.MESSAGE_DELETED();
    if (found.room.reactionsEnabled === false) throw MessagesErrors.REACTIONS_DISABLED();
    return found;
  }

  private tellReactions(roomId: string, message: MessageDoc): Promise<void> {
    return this.deps.events.toRoom(roomId, 'message.reactions', { roomId, messageId: message._id, reactions: reactionCounts(message).map(({ emoji, count }) => ({ emoji, count })) });
  }
}
