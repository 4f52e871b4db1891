import type { RoomCallReads } from '../calls/index.js';
import type { ActivityReads } from '../messages/index.js';
import type { MembershipReads, RoomReads } from '../rooms/index.js';
import { ChatStatusService } from './chat-status.service.js';

/** The chat list's snapshot: every room of the caller with what a phone shows for it at start-up. */
export function chatStatusArea(deps: { rooms: RoomReads; members: MembershipReads; activity: ActivityReads; roomCalls: RoomCallReads; clock: () => Date }) {
  const chatStatus = new ChatStatusService({
    rooms: deps.rooms,
    members: deps.members,
    activity: deps.activity,
    roomCalls: deps.roomCalls,
    clock: deps.clock,
  });
  return { chatStatus };
}
