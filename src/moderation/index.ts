import type { AppsArea } from '../apps/index.js';
import type { BlockWrites } from '../contacts/index.js';
import type { DevicesService } from '../devices/index.js';
import type { MessagesArea } from '../messages/index.js';
import type { DeviceEvents } from '../platform/device-events.js';
import type { Platform } from '../platform/platform.js';
import type { RoomsArea } from '../rooms/index.js';
import type { UserSuspensions } from '../users/index.js';
import { ModerationRepo } from './moderation.repo.js';
import { AdminAuditRepo } from '../platform/admin-audit.repo.js';
import { ModerationService } from './moderation.service.js';
import { REPORT_REASONS } from './moderation.schemas.js';

const isReason = (value: string): value is (typeof REPORT_REASONS)[number] => (REPORT_REASONS as readonly string[]).includes(value);

/** Reports and moderation: members report what they can see; site administrators decide, in an audit log. */
export function moderationArea(
  p: Platform,
  deps: {
    users: UserSuspensions;
    isSiteAdmin: (userId: string) => Promise<boolean>;
    devices: DevicesService;
    messages: Pick<MessagesArea, 'policy' | 'messages' | 'changes'>;
    rooms: Pick<RoomsArea, 'rooms'>;
    apps: Pick<AppsArea, 'unlist' | 'installs' | 'policy'>;
    blocks: BlockWrites;
    events: DeviceEvents;
  },
) {
  const repo = new ModerationRepo(p.db);
  const audit = new AdminAuditRepo(p.db);
  const moderation = new ModerationService({
    repo,
    audit,
    users: deps.users,
    isSiteAdmin: deps.isSiteAdmin,
    revokeAllDevices: (userId) => deps.devices.revokeAllOf(userId),
    readableMessage: async (principal, messageId) => {
      const { message } = await deps.messages.policy.forReader(principal, messageId);
      return { authorId: message.userId, encrypted: message.encrypted };
    },
    visibleRoom: async (principal, roomId) => Boolean(await deps.rooms.rooms.get(principal, roomId)),
    visibleApp: async (principal, appId) => (await deps.apps.policy.visible(appId, principal)) !== null,
    removeMessage: (messageId) => deps.messages.changes.removeForEveryone(messageId),
    unlistApp: deps.apps.unlist,
    block: (blockerId, blockedId, reason) => deps.blocks.blockFor(blockerId, blockedId, reason, p.clock()),
    events: deps.events,
    ephemeral: p.ephemeral,
    reportsKey: p.keys.moderation.reports,
    reportsPerHour: p.config.REPORTS_PER_HOUR,
    clock: p.clock,
  });
  // Declining a room invitation may report the inviter in the same step.
  p.domainEvents.on('room.invitation-reported', ({ inviteeId, inviterId, reason, roomId }) =>
    moderation.reportUser(inviteeId, inviterId, isReason(reason) ? reason : 'UNKNOWN', `Reported while declining an invitation into room ${roomId}`),
  );
  /** A deleted account's words in the reports it made, emptied. */
  const forgetReporter = (userId: string) => repo.eraseCommentsOf(userId);
  return { repos: { moderation: repo, adminAudit: audit }, moderation, forgetReporter };
}

// What other areas use of this one (they import only this file).
export type { ModerationService } from './moderation.service.js';
