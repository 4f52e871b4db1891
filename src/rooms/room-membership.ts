import type { Clock } from '../platform/clock.js';
import type { DeviceEvents } from '../platform/device-events.js';
import type { DomainEvents } from '../platform/domain-events.js';
import type { RoomMembersRepo } from './room-members.repo.js';
import type { RoomDoc, RoomsRepo } from './rooms.repo.js';

/** Joining and parting: the membership row, the member count, the sockets' room, and the other areas told. */
export class RoomMembership {
  constructor(
    private readonly deps: { rooms: RoomsRepo; members: RoomMembersRepo; events: DeviceEvents; domainEvents: DomainEvents; clock: Clock },
  ) {}

  async join(room: RoomDoc, userId: string, muted = false): Promise<void> {
    if (await this.deps.members.add(room._id, userId, this.deps.clock(), { muted })) {
      await this.deps.rooms.addToMemberCount(room._id, 1);
      this.deps.events.joinChatRoom(userId, room._id);
      await this.deps.domainEvents.emit('room.member-joined', { roomId: room._id, userId });
    }
  }

  async part(room: RoomDoc, userId: string, byAdmin: boolean): Promise<void> {
    if (await this.deps.members.deactivate(room._id, userId, byAdmin)) {
      await this.deps.rooms.addToMemberCount(room._id, -1);
      this.deps.events.leaveChatRoom(userId, room._id);
      // Other areas react (end-to-end encrypted rooms: the old set of devices may no longer receive keys).
      await this.deps.domainEvents.emit('room.member-left', { roomId: room._id, userId, byAdmin });
    }
  }
}
