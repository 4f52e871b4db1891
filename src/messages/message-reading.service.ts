import type { Principal } from '../platform/principal.js';
import { assertTranslatable } from '../rooms/index.js';
import { MessagesErrors } from './messages.errors.js';
import { keepsReceipts, MAX_MESSAGE_LENGTH, presentMessage, cleanText, type MessagesDeps, type MessageView, type PostTranslationsView } from './message-shared.js';

/** Reading a room's messages and comments, translations of broadcast posts, read marks and receipts. */
export class MessageReadingService {
  constructor(private readonly deps: MessagesDeps) {}

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
}
