import type { Clock } from '../platform/clock.js';
import type { DomainEvents } from '../platform/domain-events.js';
import type { DeviceEvents } from '../platform/device-events.js';
import { chosenLevel, levelNow, type NotificationLevel } from './notifications.js';
import type { RoomMemberDoc } from './room-members.repo.js';
import { randomUUID } from 'node:crypto';
import type { Principal } from '../platform/principal.js';
import type { RoomMembersRepo } from './room-members.repo.js';
import type { RoomMembership } from './room-membership.js';
import type { RoomInvitationsService } from './room-invitations.service.js';
import { linkOf, type RoomDoc, type RoomType, type RoomsRepo } from './rooms.repo.js';
import { presentRoom, type RoomView } from './room-view.js';
import { wordsOf } from '../platform/words.js';
import type { UserReads } from '../users/index.js';
import { page, type Page } from '../platform/paging.js';
import { RoomsErrors } from './rooms.errors.js';
import { assertTranslatable, directChatKey, isOpenRoom, type RoomsPolicy } from './rooms.policy.js';
import { must } from '../platform/must.js';

export interface CreateRoomInput {
  type: RoomType;
  name?: string;
  description?: string;
  memberIds?: string[];
  visible?: boolean;
}

const notFound = () => RoomsErrors.ROOM_NOT_FOUND();
const notAllowed = () => RoomsErrors.ROOM_NOT_ALLOWED();

const hasLink = (type: RoomType) => type === 'PUBLIC_GROUP' || type === 'BROADCAST';

/** Rooms of the five kinds: creation, membership, administration and the spec's rules 1 to 6. */
export class RoomsService {
  constructor(
    private readonly deps: {
      rooms: RoomsRepo;
      members: RoomMembersRepo;
      membership: RoomMembership;
      invitations: RoomInvitationsService;
      users: UserReads;
      policy: RoomsPolicy;
      supportedLanguages: string[];
      domainEvents: DomainEvents;
      events: Pick<DeviceEvents, 'toUsers'>;
      clock: Clock;
    },
  ) {}

  private now(): Date {
    return this.deps.clock();
  }

  private room(roomId: string): Promise<RoomDoc> {
    return this.deps.policy.room(roomId);
  }

  private managedRoom(principal: Principal, roomId: string): Promise<RoomDoc> {
    return this.deps.policy.managedRoom(principal, roomId);
  }

  private join(room: RoomDoc, userId: string, muted = false): Promise<void> {
    return this.deps.membership.join(room, userId, muted);
  }

  async create(principal: Principal, input: CreateRoomInput): Promise<RoomView> {
    const { rooms } = this.deps;
    const others = [...new Set(input.memberIds ?? [])].filter((id) => id !== principal.userId);
    const now = this.now();
    if (input.type === 'DIRECT') {
      // A direct chat is between exactly two users and unique per pair: asking again returns it.
      if ((input.memberIds ?? []).length !== 1 || others.length !== 1) throw RoomsErrors.DIRECT_NEEDS_ONE_MEMBER();
      // `!`: exactly one other member was checked just above.
      const other = others[0]!;
      const key = directChatKey(principal.userId, other);
      const existing = await rooms.findByUniqueKey(key);
      // The other user is brought in only if they never were a member (one who left the chat stays
      // out): a connection at once, anyone else by a message request they accept first.
      const bringOther = !existing || !(await this.deps.members.find(existing._id, other));
      // A block either way refuses the chat (admissions checks it for a user it brings in).
      if (!bringOther) await this.deps.invitations.assertNoBlock(principal.userId, other);
      const admissions = await this.deps.invitations.admissions(principal.userId, 'DIRECT', bringOther ? [other] : []);
      if (existing) {
        // Opening the chat the other user asked for answers their message request: accepted.
        if (!(await this.deps.invitations.acceptIfPending(principal, existing))) await this.join(existing, principal.userId);
        await this.deps.invitations.admit(existing, principal.userId, admissions);
        return presentRoom((await rooms.findById(existing._id)) ?? existing);
      }
      const room = this.newRoom(principal, { ...input, name: undefined, description: undefined }, key, now, 'en');
      try {
        await rooms.insert(room);
      } catch {
        const raced = await rooms.findByUniqueKey(key);
        if (raced) return presentRoom(raced);
        throw notFound();
      }
      await this.join(room, principal.userId);
      await this.deps.invitations.admit(room, principal.userId, admissions);
      return presentRoom((await rooms.findById(room._id)) ?? room);
    }

    if (!input.name || input.name.length < 3 || input.name.length > 50) throw RoomsErrors.ROOM_NAME_INVALID();
    // Every member is checked before anything is made: one refusal refuses the whole room.
    const admissions = await this.deps.invitations.admissions(principal.userId, input.type, others);
    const creator = await this.deps.users.findById(principal.userId);
    const room = this.newRoom(principal, input, '', now, creator?.language ?? 'en');
    room.uniqueKey = room._id;
    if (hasLink(room.type)) {
      room.link = linkOf(must(room.name, 'a group\'s name'));
      if (!(await rooms.claimLink(room.link, room._id, now))) throw RoomsErrors.ROOM_LINK_TAKEN();
    }
    await rooms.insert(room);
    await this.join(room, principal.userId);
    await this.deps.invitations.admit(room, principal.userId, admissions);
    return presentRoom((await rooms.findById(room._id)) ?? room);
  }

  private newRoom(principal: Principal, input: CreateRoomInput, uniqueKey: string, now: Date, language: string): RoomDoc {
    return {
      language,
      _id: randomUUID(),
      type: input.type,
      name: input.name ?? null,
      description: input.description ?? null,
      link: null,
      nameWords: wordsOf(input.name ?? null),
      creatorId: principal.userId,
      admins: [],
      commentsEnabled: false,
      participantPublishEnabled: input.type !== 'BROADCAST',
      visible: input.type === 'BROADCAST' ? (input.visible ?? true) : false,
      uniqueKey,
      memberCount: 0,
      createdAt: now,
      updatedAt: now,
    };
  }

  /** The caller's rooms, newest first. */
  async listMine(principal: Principal, pageSize: number, currentPage: number): Promise<Page<RoomView>> {
    const ids = await this.deps.members.activeRoomIds(principal.userId);
    const rooms = (await this.deps.rooms.findManyByIds(ids)).sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime());
    return page(rooms.slice(currentPage * pageSize, (currentPage + 1) * pageSize).map((room) => presentRoom(room)), rooms.length, pageSize, currentPage);
  }

  /** Rule 1: the creator or an admin, or an enabled member of a public group; anyone else 400. */
  async get(principal: Principal, roomId: string): Promise<RoomView> {
    return presentRoom(await this.deps.policy.mayView(principal, roomId));
  }

  /** Rule 2: creator or admin, not in a direct chat; public-group switches only when both are given; renames move the link. */
  async update(
    principal: Principal,
    roomId: string,
    input: { name: string; description: string; commentsEnabled?: boolean | null; participantPublishEnabled?: boolean | null; reactionsEnabled?: boolean | null },
  ): Promise<RoomView> {
    const room = await this.managedRoom(principal, roomId);
    const now = this.now();
    const set: Partial<RoomDoc> = { name: input.name, description: input.description, nameWords: wordsOf(input.name), updatedAt: now };
    const bothSwitches = input.commentsEnabled !== undefined && input.commentsEnabled !== null && input.participantPublishEnabled !== undefined && input.participantPublishEnabled !== null;
    if (room.type === 'PUBLIC_GROUP' && bothSwitches) {
      // `!`: bothSwitches says both are set.
      set.commentsEnabled = input.commentsEnabled!;
      set.participantPublishEnabled = input.participantPublishEnabled!;
    }
    if (room.type === 'BROADCAST' && input.reactionsEnabled !== undefined && input.reactionsEnabled !== null) set.reactionsEnabled = input.reactionsEnabled;
    if (room.type === 'PUBLIC_GROUP' && input.name !== room.name) {
      const link = linkOf(input.name);
      // The old link stays in room_links pointing here: a redirect.
      if (link !== room.link && !(await this.deps.rooms.claimLink(link, room._id, now))) {
        throw RoomsErrors.ROOM_LINK_TAKEN();
      }
      set.link = link;
    }
    return presentRoom((await this.deps.rooms.update(room._id, set)) ?? room);
  }

  /** Rule 3: creator or admin switch one participant's right to post; the participant must be an enabled member. */
  async setPublishEnabled(principal: Principal, roomId: string, participantId: string, publishEnabled: boolean): Promise<void> {
    await this.deps.policy.managerOf(principal, roomId);
    await this.deps.policy.enabledMember(roomId, participantId).catch(() => {
      throw RoomsErrors.NOT_A_MEMBER({ message: 'The participant is not an enabled member' });
    });
    await this.deps.members.set(roomId, participantId, { publishEnabled });
  }

  /** Rule 4: the caller's own mute setting (true while the room is NONE for them); the caller must be an enabled member. */
  async muted(principal: Principal, roomId: string): Promise<{ muted: boolean }> {
    return { muted: (await this.notifications(principal, roomId)).levelNow === 'NONE' };
  }

  /** The spec's mute, on the same state as the levels: muting is NONE, unmuting ALL (a mute with an end goes either way). */
  async setMuted(principal: Principal, roomId: string, muted: boolean): Promise<{ muted: boolean }> {
    const now = await this.setNotifications(principal, roomId, { level: muted ? 'NONE' : 'ALL', mutedUntil: null });
    return { muted: now.levelNow === 'NONE' };
  }

  /** How loud the room is for the caller: the level chosen (or the room's default), a mute with an end, the level in force now. */
  async notifications(principal: Principal, roomId: string): Promise<RoomNotificationsView> {
    const room = await this.room(roomId);
    return presentNotifications(room, await this.deps.policy.enabledMember(roomId, principal.userId), this.now());
  }

  /** Sets how loud the room is for the caller; their other devices are told. */
  async setNotifications(principal: Principal, roomId: string, input: { level: NotificationLevel; mutedUntil?: string | null | undefined }): Promise<RoomNotificationsView> {
    const room = await this.room(roomId);
    await this.deps.policy.enabledMember(roomId, principal.userId);
    const now = this.now();
    const until = input.mutedUntil ? new Date(input.mutedUntil) : null;
    const mutedUntil = until && until.getTime() > now.getTime() ? until : null;
    const member = await this.deps.members.set(roomId, principal.userId, input.level === 'NONE' ? { muted: true, mutedUntil } : { muted: false, level: input.level, mutedUntil });
    if (!member) throw RoomsErrors.NOT_A_MEMBER();
    // Who a post may be pushed to changed: the room's push reach is learned again.
    await this.deps.domainEvents.emit('room.member-changed', { roomId, userId: principal.userId });
    const view = presentNotifications(room, member, now);
    await this.deps.events.toUsers([principal.userId], 'room.notifications-changed', view, { exceptDeviceId: principal.deviceId });
    return view;
  }

  /**
   * Rule 5: join a public group (or rejoin one left), starting muted; a visible broadcast room is
   * returned unchanged; anything else, or a group whose admin removed the caller, is a 400.
   */
  async joinRoom(principal: Principal, roomId: string): Promise<RoomView> {
    const room = await this.room(roomId);
    if (room.type === 'BROADCAST' && room.visible) {
      const caller = await this.deps.users.findById(principal.userId);
      return presentRoom(room, caller?.language);
    }
    if (room.type !== 'PUBLIC_GROUP') throw RoomsErrors.ROOM_NOT_JOINABLE();
    const member = await this.deps.members.find(roomId, principal.userId);
    if (member?.removedByAdmin && !member.active) throw RoomsErrors.REMOVED_BY_ADMIN();
    if (!member?.active) await this.join(room, principal.userId, true);
    return presentRoom((await this.deps.rooms.findById(roomId)) ?? room);
  }

  /** Rule 6: public groups, largest first, matching the words of the query, or simply the most popular. */
  async search(_principal: Principal, input: { query?: string; pageSize: number; currentPage: number }): Promise<Page<RoomView>> {
    const words = wordsOf(input.query ?? null);
    const { items, total } = await this.deps.rooms.searchPublic(words, input.currentPage * input.pageSize, input.pageSize);
    return page(items.map((room) => presentRoom(room)), total, input.pageSize, input.currentPage);
  }

  /**
   * The creator or an admin brings a user in: a connection of theirs (or an existing member) at once,
   * anyone else by an invitation; 400 when the user's setting refuses, a block stands, or the user
   * declined this room's invitation before.
   */
  async addMember(principal: Principal, roomId: string, userId: string): Promise<'MEMBER' | 'INVITED'> {
    const room = await this.managedRoom(principal, roomId);
    if ((await this.deps.members.find(roomId, userId))?.active) return 'MEMBER';
    const admissions = await this.deps.invitations.admissions(principal.userId, room.type, [userId]);
    const outcome = (await this.deps.invitations.admit(room, principal.userId, admissions)).get(userId);
    if (outcome === 'DECLINED') throw RoomsErrors.INVITATION_DECLINED();
    return outcome === 'INVITED' || outcome === 'ALREADY_INVITED' ? 'INVITED' : 'MEMBER';
  }

  /** Removal by the creator or an admin; remembered, so the user cannot join back alone. */
  async removeMember(principal: Principal, roomId: string, userId: string): Promise<void> {
    const room = await this.managedRoom(principal, roomId);
    if (userId === room.creatorId) throw RoomsErrors.CANNOT_REMOVE_CREATOR();
    await this.deps.policy.activeMember(roomId, userId);
    await this.deps.membership.part(room, userId, true);
    if (room.admins.includes(userId)) await this.deps.rooms.setAdmin(room._id, userId, false);
  }

  async setMemberEnabled(principal: Principal, roomId: string, userId: string, enabled: boolean): Promise<void> {
    const room = await this.managedRoom(principal, roomId);
    if (userId === room.creatorId) throw RoomsErrors.CANNOT_DISABLE_CREATOR();
    if (!(await this.deps.members.set(roomId, userId, { enabled }))) throw RoomsErrors.NOT_A_MEMBER({ message: 'Not a member of this room' });
    await this.deps.domainEvents.emit('room.member-changed', { roomId, userId });
  }

  async setAdmin(principal: Principal, roomId: string, userId: string, admin: boolean): Promise<void> {
    const room = await this.managedRoom(principal, roomId);
    if (userId === room.creatorId) throw RoomsErrors.CREATOR_IS_OWNER();
    if (admin) {
      await this.deps.policy.enabledMember(roomId, userId).catch(() => {
        throw RoomsErrors.NOT_A_MEMBER({ message: 'Only enabled members can be admins' });
      });
    }
    await this.deps.rooms.setAdmin(room._id, userId, admin);
  }

  async leave(principal: Principal, roomId: string): Promise<void> {
    const room = await this.room(roomId);
    await this.deps.policy.activeMember(roomId, principal.userId);
    await this.deps.membership.part(room, principal.userId, false);
    if (room.admins.includes(principal.userId)) await this.deps.rooms.setAdmin(room._id, principal.userId, false);
  }

  /**
   * A language version of a broadcast room's name and description, by its creator or an admin, or
   * a site administrator; an empty name removes it. Joining shows it to users of that language.
   */
  async translate(principal: Principal, roomId: string, language: string, input: { name: string; description: string | null }): Promise<RoomView> {
    const room = await this.room(roomId);
    if (room.type !== 'BROADCAST') throw RoomsErrors.NOT_A_BROADCAST_ROOM();
    if (!(await this.deps.policy.mayTranslate(principal, room))) throw notAllowed();
    assertTranslatable(language, room.language ?? 'en', this.deps.supportedLanguages, 'room');
    const name = input.name.trim();
    if (name.length > 0 && (name.length < 3 || name.length > 50)) throw RoomsErrors.ROOM_NAME_INVALID();
    const updated = await this.deps.rooms.setTranslation(room._id, language, name.length === 0 ? null : { name, description: input.description });
    return presentRoom(updated ?? room, language);
  }

  /** A readable link to its room, following the redirects renamed rooms leave; public groups and visible broadcasts only. */
  async byLink(_principal: Principal, link: string): Promise<RoomView> {
    const roomId = await this.deps.rooms.roomIdOfLink(link.toLowerCase());
    const room = roomId ? await this.deps.rooms.findById(roomId) : null;
    if (!room || !isOpenRoom(room)) throw notFound();
    return presentRoom(room);
  }

  /** Which of `others` share at least one room with the user. */
  sharingARoom(userId: string, others: string[]): Promise<Set<string>> {
    return this.deps.members.sharingARoom(userId, others);
  }

  /**
   * A deleted account leaves every room. A room it created passes to its longest-standing admin, else
   * its longest-standing member; a room left with nobody is closed. Its pending invitations, to it or
   * from it, are cancelled. Each step may repeat.
   */
  async forgetMember(userId: string): Promise<void> {
    const { rooms, members, membership, invitations, clock } = this.deps;
    for (const roomId of await members.activeRoomIds(userId)) {
      const room = await rooms.findById(roomId);
      if (!room) continue;
      await membership.part(room, userId, false);
      if (room.admins.includes(userId)) await rooms.setAdmin(room._id, userId, false);
    }
    for (const room of await rooms.createdBy(userId)) {
      const remaining = await members.activeMembersOf(room._id);
      const successor = remaining.find((member) => room.admins.includes(member.userId)) ?? remaining[0];
      await rooms.update(room._id, successor ? { creatorId: successor.userId, admins: room.admins.filter((id) => id !== userId) } : { closedAt: room.closedAt ?? clock(), admins: [] });
    }
    await invitations.cancelAllOf(userId);
    await members.forgetListOf(userId);
  }

  /** The rooms a user is an active member of: their sockets join these rooms' broadcasts. */
  chatRoomIdsOf(userId: string): Promise<string[]> {
    return this.deps.members.activeRoomIds(userId);
  }
}

export interface RoomNotificationsView {
  roomId: string;
  level: NotificationLevel;
  mutedUntil: string | null;
  levelNow: NotificationLevel;
}

function presentNotifications(room: RoomDoc, member: Pick<RoomMemberDoc, 'muted' | 'level' | 'mutedUntil'>, now: Date): RoomNotificationsView {
  const until = member.mutedUntil && member.mutedUntil.getTime() > now.getTime() ? member.mutedUntil.toISOString() : null;
  return { roomId: room._id, level: chosenLevel(member, room), mutedUntil: until, levelNow: levelNow(member, room, now) };
}
