import type { Principal } from '../platform/principal.js';
import { isEnabledMember, type RoomsPolicy } from '../rooms/index.js';
import { RoomsErrors } from '../rooms/rooms.errors.js';
import type { RoomDoc } from '../rooms/index.js';
import { MessagesErrors } from './messages.errors.js';
import type { MessageDoc, MessagesRepo } from './messages.repo.js';

/** Who may do what with a message: each through its room's policy. */
export class MessagesPolicy {
  constructor(private readonly deps: { messages: MessagesRepo; rooms: RoomsPolicy }) {}

  /** The message and its room; 400 MESSAGE_NOT_FOUND (also for a comment where a post is wanted). */
  async withRoom(messageId: string, options: { postOnly?: boolean } = {}): Promise<{ message: MessageDoc; room: RoomDoc }> {
    const message = await this.message(messageId, options);
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
    const message = await this.message(messageId, options);
    // Commenting is a hot path: the room and membership come from the caches posting uses.
    const { room, member } = await this.deps.rooms.cached(message.roomId, principal.userId);
    if (!room) throw MessagesErrors.MESSAGE_NOT_FOUND();
    const active = member !== null && member.active;
    if (!isEnabledMember(member)) {
      // Someone who may not even read the room hears what a missing message answers: ids are not probed.
      if (!active && !(await this.mayRead(principal, room._id))) throw MessagesErrors.MESSAGE_NOT_FOUND();
      throw RoomsErrors.NOT_A_MEMBER();
    }
    return { message, room };
  }

  private mayRead(principal: Principal, roomId: string): Promise<boolean> {
    return this.deps.rooms.mayRead(principal, roomId).then(
      () => true,
      () => false,
    );
  }

  /** The message (a post, when `postOnly`), or 400 MESSAGE_NOT_FOUND. */
  private async message(messageId: string, options: { postOnly?: boolean }): Promise<MessageDoc> {
    const message = await this.deps.messages.findById(messageId);
    if (!message || (options.postOnly && message.parentId !== null)) throw MessagesErrors.MESSAGE_NOT_FOUND();
    return message;
  }

  /** The message, in a room the caller may read (spec, Messages rules 5 and 7). */
  async forReader(principal: Principal, messageId: string): Promise<{ message: MessageDoc; room: RoomDoc }> {
    const found = await this.withRoom(messageId);
    // A message of a room the caller may not read answers as a missing one.
    if (!(await this.mayRead(principal, found.room._id))) throw MessagesErrors.MESSAGE_NOT_FOUND();
    return found;
  }
}
