import type { Principal } from '../platform/principal.js';
import type { MessageDoc } from './messages.repo.js';
import type { RoomDoc } from '../rooms/index.js';
import { MessagesErrors } from './messages.errors.js';
import { reactionCounts, isOneEmoji, type MessagesDeps } from './message-shared.js';

/** Reactions: one emoji per member and message, counted for everyone. */
export class ReactionsService {
  constructor(private readonly deps: MessagesDeps) {}

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
