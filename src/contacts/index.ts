import { publicBaseUrl } from '../platform/config.js';
import type { DeviceEvents } from '../platform/device-events.js';
import type { Platform } from '../platform/platform.js';
import { narrow } from '../platform/narrow.js';
import { QUEUES } from '../platform/queues.js';
import type { UserReads } from '../users/index.js';
import { BlocksRepo } from './blocks.repo.js';
import { BlocksService } from './blocks.service.js';
import { ConnectionRequestsRepo } from './connection-requests.repo.js';
import { ConnectionsRepo } from './connections.repo.js';
import { ContactsService } from './contacts.service.js';

/** Contacts: connection requests and invitations, connections, blocks. */
export function contactsArea(p: Platform, deps: { users: UserReads; events: DeviceEvents }) {
  const repos = { connections: new ConnectionsRepo(p.db), connectionRequests: new ConnectionRequestsRepo(p.db), blocks: new BlocksRepo(p.db) };
  const blocks = new BlocksService(repos.blocks, deps.users, repos.connectionRequests, publicBaseUrl(p.config), p.domainEvents, p.clock);
  const contacts = new ContactsService({
    users: deps.users,
    requests: repos.connectionRequests,
    connections: repos.connections,
    blocks: repos.blocks,
    blocker: blocks,
    events: deps.events,
    sms: p.sms,
    email: p.email,
    enqueueInvitation: (job) => p.queues.add(QUEUES.invitations, job, { delayMs: 30_000 }),
    appName: p.config.TOTP_ISSUER,
    publicBaseUrl: publicBaseUrl(p.config),
    clock: p.clock,
    limits: { perHour: p.config.CONTACT_INVITES_PER_HOUR, perDay: p.config.CONTACT_INVITES_PER_DAY, ephemeral: p.ephemeral, key: p.keys.contacts.invitesBy },
  });
  // Invitations sent to a number become requests to the account that signs up with it, told to the new device.
  p.domainEvents.on('user.signed-in', ({ userId }) => contacts.claimInvites(userId));
  p.domainEvents.on('user.email-confirmed', ({ userId }) => contacts.claimInvites(userId));
  /** A deleted account's connections, requests, invitations and own blocks removed; each step may repeat. */
  const forgetUser = async (userId: string) => {
    await Promise.all([repos.connections.removeAllOf(userId), repos.connectionRequests.removeAllOf(userId), repos.blocks.removeByBlocker(userId)]);
  };
  /** The user's connections, requests and blocks for their data export: other people by id only. */
  const exportOf = async (userId: string) => {
    const all = 1_000_000;
    const [connections, requests, blocked] = await Promise.all([repos.connections.pageForUser(userId, 0, all), repos.connectionRequests.pageForUser(userId, 0, all), repos.blocks.pageForBlocker(userId, 0, all)]);
    return {
      connections: connections.items.map((c) => ({ userId: c.userIds.find((id) => id !== userId) ?? userId, since: c.createdAt.toISOString(), incomingCallsDisabled: c.incomingCallsDisabledBy.includes(userId) })),
      requests: requests.items.map((r) => ({
        id: r._id,
        direction: r.senderId === userId ? 'SENT' : 'RECEIVED',
        otherUserId: r.senderId === userId ? r.recipientId : r.senderId,
        customMessage: r.customMessage,
        status: r.status,
        createdAt: r.createdAt.toISOString(),
        answeredAt: r.answeredAt?.toISOString() ?? null,
      })),
      blocks: blocked.items.map((b) => ({ userId: b.blockedId, reason: b.reason, createdAt: b.createdAt.toISOString() })),
    };
  };
  return {
    repos,
    contacts,
    blocks,
    forgetUser,
    exportOf,
    // What other areas read of contacts, each a small interface of its own (never a repository).
    blockReads: narrow(repos.blocks, ['eitherBlocked', 'isBlocked', 'blockersAmong']),
    connectionReads: narrow(repos.connections, ['find', 'connectedAmong']),
  };
}
export type ContactsArea = ReturnType<typeof contactsArea>;

// What other areas use of this one (they import only this file).

export type { ContactsService } from './contacts.service.js';
export type { BlockReason } from './blocks.repo.js';
export type { BlocksService } from './blocks.service.js';

/** What other areas ask of blocks: whether one user blocked another, or either the other. */
export type BlockReads = ContactsArea['blockReads'];
/** What other areas read of connections: the connection between two users, or which of some users are connected to one. */
export type ConnectionReads = ContactsArea['connectionReads'];
/** What other areas may do to blocks: one user blocks another (a room invitation declined with a block). */
export type BlockWrites = Pick<import('./blocks.service.js').BlocksService, 'blockFor'>;
