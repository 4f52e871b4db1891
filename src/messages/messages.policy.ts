import type { Principal } from '../platform/principal.js';
import type { RoomsPolicy } from '../rooms/index.js';
import type { RoomDoc } from '../rooms/index.js';
import { MessagesErrors } from './messages.errors.js';
import type { MessageDoc, MessagesRepo } from './messages.repo.js';

/** Who may do what with a message: each through its room's policy. */
export class MessagesPolicy {
  constructor(private readonly deps: { messages: MessagesRepo; rooms: RoomsPolicy }) {}

  /** The message and its room; 400 MESSAGE_NOT_FOUND (also for a comment where a post is wanted). */
  async withRoom(messageId: string, options: { postOnly?: boolean } = {}): Promise<{ message: MessageDoc; room: RoomDoc }> {
    const message = await this.deps.messages.findById(messageId);
    if (!message || (options.postOnly && message.parentId !== null)) throw MessagesErrors.MESSAGE_NOT_FOUND();
    const room = await this.deps.rooms.room(message.roomId).catch(() => {
      throw MessagesErrors.MESSAGE_NOT_FOUND();
    });
    return { message, room };
  }

  /**
   * Spec, Messages rule 6 (summaries) and comments: the message, in a room the caller is an enabled
   * member of; 400 MESSAGE_NOT_FOUND or NOT_A_MEMBER.
   */
  async forEnabledMember(principal: Principal, messageId: string, options: { postOnly?: boolean } = {}): Promise<{ message: MessageDoc; room: RoomDoc }> {
    const found = await this.withRoom(messageId, options);
    await this.deps.rooms.enabledMember(found.room._id, principal.userId);
    return found;
  }

  /** The message, in a room the caller may read (spec, Messages rules 5 and 7). */
  async forReader(principal: Principal, messageId: string): Promise<{ message: MessageDoc; room: RoomDoc }> {
    const found = await this.withRoom(messageId);
    await this.deps.rooms.mayRead(principal, found.room._id);
    return found;
  }
}
