import type { BlockReads } from '../contacts/index.js';
import { ContactsErrors } from '../contacts/contacts.errors.js';
import type { Principal } from '../platform/principal.js';
import type { RoomMemberDoc, RoomMembersRepo } from './room-members.repo.js';
import { RoomsErrors } from './rooms.errors.js';
import type { RoomDoc, RoomsRepo } from './rooms.repo.js';

/** The creator or an admin of the room. */
export const isManager = (room: RoomDoc, userId: string) => room.creatorId === userId || room.admins.includes(userId);

/** Rooms anyone may read and resolve by link: public groups and visible broadcast rooms. */
export const isOpenRoom = (room: RoomDoc) => !room.closedAt && (room.type === 'PUBLIC_GROUP' || (room.type === 'BROADCAST' && room.visible));

/** An active member that no admin disabled. */
export const isEnabledMember = (member: RoomMemberDoc | null): member is RoomMemberDoc => member !== null && member.active && member.enabled;

/** The key that makes a direct chat unique per pair of users. */
export const directChatKey = (a: string, b: string) => [a, b].sort().join(':');

/** The other user of a direct chat, seen from `userId`. */
export const otherInDirectChat = (room: RoomDoc, userId: string) => (room.type === 'DIRECT' ? room.uniqueKey.split(':').find((id) => id !== userId) : undefined);

/**
 * Spec, Messages rule 2 (and a broadcast room's name likewise): a translation is into a language the
 * server supports, other than the original; else 400.
 */
export function assertTranslatable(language: string, original: string, supported: string[], what: 'post' | 'room'): void {
  if (!supported.includes(language)) throw RoomsErrors.LANGUAGE_NOT_SUPPORTED({ message: `Supported: ${supported.join(', ')}` });
  if (language === original) throw RoomsErrors.ORIGINAL_LANGUAGE({ message: `This is the ${what}'s original language` });
}

/**
 * Who may do what in a room: each question answered once, here, and asked by every service that
 * needs it (rooms, messages, attachments, summaries, calls).
 */
export class RoomsPolicy {
  constructor(
    private readonly deps: { rooms: RoomsRepo; members: RoomMembersRepo; blocks: BlockReads; isSiteAdmin: (userId: string) => Promise<boolean> },
  ) {}

  /**
   * Whom a post may mention: the room's members among `userIds` (anyone else is left out, so a
   * client's guess never fails a post); mentioning the whole room is for its creator and admins.
   */
  async mentionable(room: RoomDoc, authorId: string, userIds: string[], wholeRoom: boolean): Promise<string[]> {
    if (wholeRoom && room.creatorId !== authorId && !room.admins.includes(authorId)) throw RoomsErrors.MENTION_ROOM_NOT_ALLOWED();
    return this.deps.members.activeAmong(room._id, [...new Set(userIds)]);
  }

  /** The room, or 400 ROOM_NOT_FOUND. */
  async room(roomId: string): Promise<RoomDoc> {
    const room = await this.deps.rooms.findById(roomId);
    if (!room) throw RoomsErrors.ROOM_NOT_FOUND();
    return room;
  }

  /** The user's active, enabled membership of the room, or 400 NOT_A_MEMBER (spec, Rooms rule 4; Messages rules 1 and 6). */
  async enabledMember(roomId: string, userId: string): Promise<RoomMemberDoc> {
    const member = await this.deps.members.find(roomId, userId);
    if (!isEnabledMember(member)) throw RoomsErrors.NOT_A_MEMBER();
    return member;
  }

  /** The user's active membership (enabled or not), or 400 NOT_A_MEMBER. */
  async activeMember(roomId: string, userId: string): Promise<RoomMemberDoc> {
    const member = await this.deps.members.find(roomId, userId);
    if (!member?.active) throw RoomsErrors.NOT_A_MEMBER();
    return member;
  }

  /** Spec, Rooms rules 2 and 3: a room the caller administers (creator or admin), and not a direct chat; else 400 ROOM_NOT_ALLOWED. */
  async managedRoom(principal: Principal, roomId: string): Promise<RoomDoc> {
    const room = await this.room(roomId);
    // A direct chat has no one to manage it: its two members cannot add members, admins or apps.
    if (room.type === 'DIRECT') throw RoomsErrors.ROOM_NOT_ALLOWED({ message: 'A direct chat cannot be managed: members, admins and apps are added to groups and broadcast rooms' });
    if (!isManager(room, principal.userId)) throw RoomsErrors.ROOM_NOT_ALLOWED();
    return room;
  }

  /** Spec, Rooms rule 3: the room, when the caller is its creator or an admin; else 400 ROOM_NOT_ALLOWED. */
  async managerOf(principal: Principal, roomId: string): Promise<RoomDoc> {
    const room = await this.room(roomId);
    if (!isManager(room, principal.userId)) throw RoomsErrors.ROOM_NOT_ALLOWED();
    return room;
  }

  /** Spec, Rooms rule 1: the creator or an admin, or an enabled member of a public group, may see the room; else 400 ROOM_NOT_FOUND. */
  async mayView(principal: Principal, roomId: string): Promise<RoomDoc> {
    const room = await this.room(roomId);
    if (isManager(room, principal.userId)) return room;
    if (room.type === 'PUBLIC_GROUP' && isEnabledMember(await this.deps.members.find(roomId, principal.userId))) return room;
    throw RoomsErrors.ROOM_NOT_FOUND();
  }

  /**
   * Spec, Messages rules 5 and 7 ("access to the room"): active members, and anyone for public groups
   * and visible broadcast rooms, may read a room's messages, comments and attachments.
   */
  async mayRead(principal: Principal, roomId: string): Promise<RoomDoc> {
    const { room, member } = await this.cached(roomId, principal.userId);
    if (!room) throw RoomsErrors.ROOM_NOT_FOUND();
    if (!member?.active && !isOpenRoom(room)) throw RoomsErrors.ROOM_NOT_FOUND({ message: 'No such room, or not one you may read' });
    return room;
  }

  /**
   * The room and the user's membership of it, read together from the 5-second caches (a write clears
   * them in every process): for the hot paths (posting, commenting, reading).
   */
  async cached(roomId: string, userId: string): Promise<{ room: RoomDoc | null; member: RoomMemberDoc | null }> {
    const [room, member] = await Promise.all([this.deps.rooms.findByIdCached(roomId), this.deps.members.findCached(roomId, userId)]);
    return { room, member };
  }

  /**
   * Spec, Messages rules 1 and 4: an enabled member; in a broadcast room, or where participants may
   * not publish, only the creator or an admin (or a participant the publish switch allowed). A block
   * ends a direct chat.
   */
  async mayPost(principal: Principal, roomId: string): Promise<RoomDoc> {
    const { room, member } = await this.cached(roomId, principal.userId);
    if (!room) throw RoomsErrors.ROOM_NOT_FOUND({ message: 'No such room' });
    if (!isEnabledMember(member)) throw RoomsErrors.NOT_A_MEMBER();
    const mayPublish = isManager(room, principal.userId) || (room.type !== 'BROADCAST' && (member.publishEnabled ?? room.participantPublishEnabled));
    if (!mayPublish) throw RoomsErrors.PUBLISH_NOT_ALLOWED();
    const other = otherInDirectChat(room, principal.userId);
    if (other && (await this.deps.blocks.eitherBlocked(principal.userId, other))) throw ContactsErrors.BLOCKED({ message: 'A block ends this direct chat' });
    return room;
  }

  /** Spec, Messages rule 2 (and the same for a broadcast room's name): the room's creator or an admin, or a site administrator. */
  async mayTranslate(principal: Principal, room: RoomDoc): Promise<boolean> {
    return isManager(room, principal.userId) || this.deps.isSiteAdmin(principal.userId);
  }

  /** Who may delete anyone's message in a room at any time: its creator or an admin, or a site administrator. */
  async mayRemoveMessages(principal: Principal, room: RoomDoc): Promise<boolean> {
    return isManager(room, principal.userId) || this.deps.isSiteAdmin(principal.userId);
  }

  /** The room's active members (read receipts: who may be told). */
  activeMemberIds(roomId: string): Promise<string[]> {
    return this.deps.members.activeMemberIds(roomId);
  }
}
