import { nextTurn, type AfterAnswer } from '../platform/after-answer.js';
import { must } from '../platform/must.js';
import type { Card } from '../platform/cards.schemas.js';
import { isDuplicateKey } from '../platform/mongo.js';
import type { Principal } from '../platform/principal.js';
import { TtlCache } from '../platform/cache/ttl-cache.js';
import type { MessageDoc, ReplyExcerpt } from './messages.repo.js';
import { ownClientKey } from './messages.repo.js';
import type { RoomDoc } from '../rooms/index.js';
import { MessagesErrors } from './messages.errors.js';
import { withinLimit } from '../platform/limits.js';
import { checkedText, presentMessage, excerptOf, appText, newMessageId, type MessagesDeps, type MessageView, type PostMessageInput, type PostRequest } from './message-shared.js';

/** Posting: messages, comments, app cards and texts. */
export class MessagesService {
  /**
   * Authors' languages (the original language of what they post), kept 10 s: a language change
   * labels posts from then on, at most 10 s late, and posting saves a database round trip.
   */
  private readonly authorLanguages = new TtlCache<string>(10_000);

  constructor(private readonly deps: MessagesDeps) {}

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
    // Mentions only of members (one read, only when there are any); the whole room, its creator's and admins'.
    const mentions = (input.mentions?.length ?? 0) > 0 || input.mentionsRoom ? await this.deps.rooms.mentionable(room, principal.userId, input.mentions ?? [], input.mentionsRoom === true) : [];
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
      ...(mentions.length > 0 ? { mentions } : {}),
      ...(input.mentionsRoom ? { mentionsRoom: true as const } : {}),
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
      return earlier ? this.resent(earlier) : this.announce(doc);
    }
    const earlier = await this.append(doc, stored);
    if (earlier) return this.resent(earlier);
    this.markAuthorRead(doc, request.afterAnswer ?? nextTurn);
    this.noteAddressed(doc, request.afterAnswer ?? nextTurn);
    return this.announce(doc);
  }

  /**
   * A timeline message that mentions members, the room, or replies to someone is noted in the room's
   * record, for each member's unread mentions (the chat list and the badge): after the answer, only
   * for such messages (a plain post writes nothing more). Lost to a crash in between, it is not counted.
   */
  private noteAddressed(doc: MessageDoc, afterAnswer: AfterAnswer): void {
    const replyTo = doc.replyTo?.userId !== undefined && doc.replyTo.userId !== doc.userId ? [doc.replyTo.userId] : [];
    const to = [...new Set([...(doc.mentions ?? []), ...replyTo])];
    if (to.length === 0 && !doc.mentionsRoom) return;
    const entry = { seq: must(doc.seq, 'the number append gave the message'), by: doc.userId, to, ...(doc.mentionsRoom ? { room: true as const } : {}) };
    afterAnswer(() => {
      this.deps.activity.noteAddressed(doc.roomId, entry).catch((error: unknown) => this.deps.logger.warn({ err: error, roomId: doc.roomId }, 'a mention was not noted'));
    });
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
    // Both before the answer: the author's next post cannot overtake this one's broadcast (a failover delays a publish).
    await Promise.all([this.deps.events.toRoom(doc.roomId, 'message.new', { ...view, messageId: view.id }), this.queuePush(doc)]);
    return view;
  }

  /** The message's push job, unless nobody could be pushed (mayNeedPush); a comment, pushed to its parent's author alone, always gets one. */
  private async queuePush(doc: MessageDoc): Promise<void> {
    if (doc.parentId !== null || (await this.deps.mayNeedPush(doc.roomId, doc.userId))) await this.deps.enqueuePush(doc._id);
  }

  /**
   * A resend of a stored message (the phone never heard the answer): the first send's message, and
   * its push queued again, since that send may have stored it and then failed before queuing (Redis
   * failing over). A no-op when the first send queued it: the job's id is the message's. Not broadcast
   * again: a socket that missed it reads it (the hub says when its broadcasts lapsed).
   */
  private async resent(earlier: MessageDoc): Promise<MessageView> {
    if (!earlier.deletedAt) await this.queuePush(earlier);
    return presentMessage(earlier);
  }

  /** The excerpt a reply carries: a message of the same room the author may read (not hidden for them), else 400. */
  private async replyExcerpt(roomId: string, replyToId: string, authorId: string): Promise<ReplyExcerpt> {
    const original = await this.deps.messages.findById(replyToId);
    if (!original || original.roomId !== roomId || original.hiddenFor?.includes(authorId)) throw MessagesErrors.REPLY_TO_NOT_FOUND();
    return excerptOf(original);
  }
}

