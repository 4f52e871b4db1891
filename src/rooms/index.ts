import type { BlockReads, BlockWrites, ConnectionReads } from '../contacts/index.js';
import { publicBaseUrl } from '../platform/config.js';
import type { DeviceEvents } from '../platform/device-events.js';
import type { Platform } from '../platform/platform.js';
import { narrow } from '../platform/narrow.js';
import type { UserReads } from '../users/index.js';
import { RoomMembersRepo } from './room-members.repo.js';
import { RoomsRepo } from './rooms.repo.js';
import { RoomsPolicy } from './rooms.policy.js';
import { RoomsService } from './rooms.service.js';
import { RoomInvitationsRepo } from './room-invitations.repo.js';
import { RoomInvitationsService } from './room-invitations.service.js';
import { RoomMembership } from './room-membership.js';

/** Rooms of the five kinds: creation, membership and invitations, administration, links, translations. */
export function roomsArea(p: Platform, deps: { users: UserReads; isSiteAdmin: (userId: string) => Promise<boolean>; blocks: BlockReads; blocker: BlockWrites; connections: ConnectionReads; events: DeviceEvents }) {
  const repos = { rooms: new RoomsRepo(p.db, p.cache), roomMembers: new RoomMembersRepo(p.db, p.cache), roomInvitations: new RoomInvitationsRepo(p.db) };
  const policy = new RoomsPolicy({ rooms: repos.rooms, members: repos.roomMembers, blocks: deps.blocks, isSiteAdmin: deps.isSiteAdmin });
  const membership = new RoomMembership({ rooms: repos.rooms, members: repos.roomMembers, events: deps.events, domainEvents: p.domainEvents, clock: p.clock });
  const invitations = new RoomInvitationsService({
    rooms: repos.rooms,
    members: repos.roomMembers,
    invitations: repos.roomInvitations,
    membership,
    policy,
    users: deps.users,
    connections: deps.connections,
    blocks: deps.blocks,
    blocker: deps.blocker,
    events: deps.events,
    domainEvents: p.domainEvents,
    publicBaseUrl: publicBaseUrl(p.config),
    limits: { perHour: p.config.ROOM_INVITATIONS_PER_HOUR, waiting: p.config.ROOM_INVITATIONS_WAITING, ephemeral: p.ephemeral, key: p.keys.rooms.invitesBy, slotKey: (inviteeId) => p.keys.slots('invitations-waiting', inviteeId) },
    clock: p.clock,
  });
  // A block cancels what either of the two invited the other to.
  p.domainEvents.on('user.blocked', ({ blockerId, blockedId }) => invitations.cancelBetween(blockerId, blockedId));
  const rooms = new RoomsService({
    rooms: repos.rooms,
    members: repos.roomMembers,
    membership,
    invitations,
    users: deps.users,
    policy,
    supportedLanguages: p.config.SUPPORTED_LANGUAGES,
    domainEvents: p.domainEvents,
    events: deps.events,
    clock: p.clock,
  });
  /** The user's rooms and memberships for their data export. */
  const exportOf = async (userId: string) => {
    const memberships = await repos.roomMembers.allOf(userId);
    const rooms = new Map((await repos.rooms.findManyByIds(memberships.map((m) => m.roomId))).map((room) => [room._id, room]));
    return memberships.map((membership) => {
      const room = rooms.get(membership.roomId);
      return {
        roomId: membership.roomId,
        type: room?.type ?? null,
        name: room?.name ?? null,
        role: room?.creatorId === userId ? 'CREATOR' : room?.admins.includes(userId) ? 'ADMIN' : 'MEMBER',
        active: membership.active,
        enabled: membership.enabled,
        muted: membership.muted,
        joinedAt: membership.joinedAt.toISOString(),
      };
    });
  };
  return {
    repos,
    rooms,
    invitations,
    policy,
    exportOf,
    // What other areas read of rooms, each a small interface of its own (never a repository).
    reads: narrow(repos.rooms, ['findById', 'findByIdCached', 'findManyByIds', 'createdAtOf']),
    membershipReads: narrow(repos.roomMembers, ['enabledMemberIds', 'activeMemberIds', 'activeRoomIds', 'membershipsOf', 'membershipsByIds', 'sharingARoom', 'pushRecipients', 'roomIdsOfUsers']),
  };
}
export type RoomsArea = ReturnType<typeof roomsArea>;

// What other areas use of this one (they import only this file).

export { assertTranslatable, isEnabledMember, isManager } from './rooms.policy.js';
export type { RoomsPolicy } from './rooms.policy.js';
export { addresses, defaultLevel as defaultLevelOf, levelNow, pushedAt, type Addressing, type NotificationLevel } from './notifications.js';
export type { RoomDoc } from './rooms.repo.js';
export { presentRoom } from './room-view.js';
export type { RoomsService } from './rooms.service.js';
export type { RoomInvitationsService } from './room-invitations.service.js';

/** What other areas read of rooms: one (cached or not) or many by id, when each was made. */
export type RoomReads = RoomsArea['reads'];
/** What other areas read of memberships: a room's members, a user's rooms, whether two users share one. */
export type MembershipReads = RoomsArea['membershipReads'];
