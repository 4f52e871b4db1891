import type { AppsArea } from '../apps/index.js';
import type { ContactsArea } from '../contacts/index.js';
import type { DevicesArea } from '../devices/index.js';
import type { Platform } from '../platform/platform.js';
import { QUEUES } from '../platform/queues.js';
import type { RoomsArea } from '../rooms/index.js';
import type { UsersArea } from '../users/index.js';
import type { WalletsArea } from '../wallets/index.js';
import { AccountDeletionsRepo, AccountExportsRepo } from './accounts.repo.js';
import { AccountsService } from './accounts.service.js';
import { ExportsService, type ExportedFile } from './exports.service.js';
import type { TokenService } from '../auth/index.js';
import type { DeviceEvents } from '../platform/device-events.js';
import { mediaBaseUrl } from '../platform/config.js';
import { uploadStagingDir } from '../platform/storage/upload-staging.js';

/**
 * Accounts: deleting one's account (and, later, exporting one's data). It sits above the areas whose
 * data an account has, and asks each to forget the user through what its factory returns.
 */
export function accountsArea(
  p: Platform,
  deps: {
    users: UsersArea;
    devices: DevicesArea;
    contacts: Pick<ContactsArea, 'forgetUser' | 'exportOf'>;
    rooms: Pick<RoomsArea, 'rooms' | 'exportOf'>;
    e2ee: { forgetUser(userId: string, deviceIds: string[]): Promise<void> };
    apps: Pick<AppsArea, 'accounts'>;
    wallets: Pick<WalletsArea, 'closing' | 'exportOf'>;
    messages: { forgetAuthor(userId: string): Promise<void>; forgetReader(userId: string): Promise<void>; exportOf(userId: string): Promise<unknown>; flushReadMarks(): Promise<void> };
    moderation: { forgetReporter(userId: string): Promise<void> };
    auth: { forgetPhone(phone: string): Promise<void> };
    attachments: { forgetUploader(userId: string): Promise<void>; exportOf(userId: string): Promise<ExportedFile[]> };
    tokens: TokenService;
    events: DeviceEvents;
  },
) {
  const repo = new AccountDeletionsRepo(p.db);
  const exportsRepo = new AccountExportsRepo(p.db);
  const { config } = p;
  const exports = new ExportsService({
    repo: exportsRepo,
    parts: {
      'profile.json': deps.users.exportOf,
      'devices.json': deps.devices.exportOf,
      'contacts.json': deps.contacts.exportOf,
      'rooms.json': deps.rooms.exportOf,
      'messages.json': deps.messages.exportOf,
      'wallets.json': deps.wallets.exportOf,
      'apps.json': (userId) => deps.apps.accounts.exportOf(userId),
    },
    files: deps.attachments.exportOf,
    storage: () => p.storage,
    tickets: { sign: (exportId, ttl) => deps.tokens.signTicket(exportId, ttl, 'export'), verify: (ticket) => deps.tokens.verifyExportTicket(ticket) },
    ticketTtlSeconds: config.TICKET_TTL,
    publicBaseUrl: mediaBaseUrl(config),
    stagingDir: uploadStagingDir(config),
    enqueue: (exportId) => p.queues.add(QUEUES.accountExport, { exportId }),
    events: deps.events,
    clock: p.clock,
    logger: p.logger,
  });
  const accounts = new AccountsService({
    repo,
    users: deps.users.accountStates,
    confirmWithTwoFactor: (userId, code) => deps.users.users.confirmWithTwoFactor(userId, code),
    removeAvatarOf: (userId) => deps.users.avatars.removeOf(userId),
    forgetExports: (userId) => exports.forgetUser(userId),
    devices: {
      revokeAllOf: (userId) => deps.devices.devices.revokeAllOf(userId),
      eraseOf: (userId) => deps.devices.devices.eraseOf(userId),
      forgetListOf: (userId) => deps.devices.devices.forgetListOf(userId),
      allIdsOf: deps.devices.allIdsOf,
    },
    forgetPhone: deps.auth.forgetPhone,
    forgetReader: deps.messages.forgetReader,
    flushPendingMarks: deps.messages.flushReadMarks,
    forgetReporter: deps.moderation.forgetReporter,
    forgetContacts: deps.contacts.forgetUser,
    forgetMemberships: (userId) => deps.rooms.rooms.forgetMember(userId),
    forgetKeys: (userId, deviceIds) => deps.e2ee.forgetUser(userId, deviceIds),
    apps: deps.apps.accounts,
    wallets: deps.wallets.closing,
    forgetAuthor: (userId) => deps.messages.forgetAuthor(userId),
    forgetUploads: (userId) => deps.attachments.forgetUploader(userId),
    enqueueErase: (userId) => p.queues.add(QUEUES.accountErase, { userId }),
    sms: p.sms,
    smsGuard: p.smsGuard,
    codes: p.codes,
    ephemeral: p.ephemeral,
    keys: { ...p.keys.accounts, codeRequests: p.keys.auth.codeRequests },
    limits: { codesPerWindow: config.LOGIN_CODE_MAX_PER_WINDOW, windowSeconds: config.LOGIN_CODE_WINDOW, maxWrong: config.LOGIN_CODE_MAX_ATTEMPTS },
    appName: config.TOTP_ISSUER,
    crashAt: p.crashAt,
    clock: p.clock,
    logger: p.logger,
  });
  return { repos: { accountDeletions: repo, accountExports: exportsRepo }, accounts, exports };
}
export type AccountsArea = ReturnType<typeof accountsArea>;

// What other areas use of this one (they import only this file).
export type { AccountsService } from './accounts.service.js';
