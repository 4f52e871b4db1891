import type { BlocksRepo } from '../contacts/blocks.repo.js';
import type { DeviceEvents } from '../platform/device-events.js';
import type { Platform } from '../platform/platform.js';
import type { RoomsArea } from '../rooms/index.js';
import type { UsersArea } from '../users/index.js';
import { MessagesRepo } from './messages.repo.js';
import { MessagesService } from './messages.service.js';

/** Posting and reading messages, comments and translations of broadcast posts. */
export function messagesArea(p: Platform, deps: { rooms: RoomsArea; users: UsersArea; blocks: BlocksRepo; events: DeviceEvents }) {
  const messagesRepo = new MessagesRepo(p.db);
  const messages = new MessagesService({
    rooms: deps.rooms.repos.rooms,
    members: deps.rooms.repos.roomMembers,
    messages: messagesRepo,
    blocks: deps.blocks,
    events: deps.events,
    geo: p.geo,
    users: deps.users.repos.users,
    isSiteAdmin: (userId) => deps.users.users.isSiteAdmin(userId),
    supportedLanguages: p.config.SUPPORTED_LANGUAGES,
    clock: p.clock,
  });
  return { repos: { messages: messagesRepo }, messages };
}
export type MessagesArea = ReturnType<typeof messagesArea>;
