import type { BlockReads } from '../contacts/index.js';
import type { DeviceEvents } from '../platform/device-events.js';
import type { Platform } from '../platform/platform.js';
import type { UsersArea } from '../users/index.js';
import { RoomMembersRepo } from './room-members.repo.js';
import { RoomsRepo } from './rooms.repo.js';
import { RoomsPolicy } from './rooms.policy.js';
import { RoomsService } from './rooms.service.js';

/** Rooms of the five kinds: creation, membership, administration, links, translations. */
export function roomsArea(p: Platform, deps: { users: UsersArea; blocks: BlockReads; events: DeviceEvents }) {
  const repos = { rooms: new RoomsRepo(p.db, p.cache), roomMembers: new RoomMembersRepo(p.db, p.cache) };
  const policy = new RoomsPolicy({ rooms: repos.rooms, members: repos.roomMembers, blocks: deps.blocks, isSiteAdmin: (userId) => deps.users.users.isSiteAdmin(userId) });
  const rooms = new RoomsService({
    rooms: repos.rooms,
    members: repos.roomMembers,
    users: deps.users.repos.users,
    blocks: deps.blocks,
    policy,
    events: deps.events,
    domainEvents: p.domainEvents,
    supportedLanguages: p.config.SUPPORTED_LANGUAGES,
    clock: p.clock,
  });
  return { repos, rooms, policy };
}
export type RoomsArea = ReturnType<typeof roomsArea>;

// What other areas use of this one (they import only this file).

export { assertTranslatable, isManager } from './rooms.policy.js';
export type { RoomsPolicy } from './rooms.policy.js';
export type { RoomDoc } from './rooms.repo.js';
export { presentRoom } from './rooms.service.js';
export type { RoomsService } from './rooms.service.js';

/** What other areas read of rooms: one (cached or not) or many by id, when each was made. */
export type RoomReads = Pick<import('./rooms.repo.js').RoomsRepo, 'findById' | 'findByIdCached' | 'findManyByIds' | 'createdAtOf'>;
/** What other areas read of memberships: a room's members, a user's rooms, whether two users share one. */
export type MembershipReads = Pick<import('./room-members.repo.js').RoomMembersRepo, 'enabledMemberIds' | 'activeMemberIds' | 'activeRoomIds' | 'membershipsOf' | 'sharingARoom'>;
