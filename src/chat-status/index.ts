import type { CallsArea } from '../calls/index.js';
import type { MessagesArea } from '../messages/index.js';
import type { RoomsArea } from '../rooms/index.js';
import { ChatStatusService } from './chat-status.service.js';

/** The chat list's snapshot: every room of the caller with what a phone shows for it at start-up. */
export function chatStatusArea(deps: { rooms: RoomsArea; messages: MessagesArea; calls: CallsArea; clock: () => Date }) {
  const chatStatus = new ChatStatusService({
    rooms: deps.rooms.repos.rooms,
    members: deps.rooms.repos.roomMembers,
    activity: deps.messages.activity,
    roomCalls: deps.calls.repos.roomCalls,
    clock: deps.clock,
  });
  return { chatStatus };
}
