import type { AppsArea } from '../apps/index.js';
import type { ContactsArea } from '../contacts/index.js';
import type { DevicesArea } from '../devices/index.js';
import type { Platform } from '../platform/platform.js';
import { QUEUES } from '../platform/queues.js';
import type { RoomsArea } from '../rooms/index.js';
import type { UsersArea } from '../users/index.js';
import type { WalletsArea } from '../wallets/index.js';
import { AccountDeletionsRepo } from './accounts.repo.js';
import { AccountsService } from './accounts.service.js';

/**
 * Accounts: deleting one's account (and, later, exporting one's data). It sits above the areas whose
 * data an account has, and asks each to forget the user through what its factory returns.
 */
export function accountsArea(
  p: Platform,
  deps: {
    users: UsersArea;
    devices: DevicesArea;
    contacts: Pick<ContactsArea, 'forgetUser'>;
    rooms: Pick<RoomsArea, 'rooms'>;
    e2ee: { forgetUser(userId: string, deviceIds: string[]): Promise<void> };
    apps: Pick<AppsArea, 'accounts'>;
    wallets: Pick<WalletsArea, 'closing'>;
    messages: { forgetAuthor(userId: string): Promise<void> };
    attachments: { forgetUploader(userId: string): Promise<void> };
  },
) {
  const repo = new AccountDeletionsRepo(p.db);
  const { config } = p;
  const accounts = new AccountsService({
    repo,
    users: deps.users.repos.users,
    confirmWithTwoFactor: (userId, code) => deps.users.users.confirmWithTwoFactor(userId, code),
    removeAvatarOf: (userId) => deps.users.avatars.removeOf(userId),
    devices: { revokeAllOf: (userId) => deps.devices.devices.revokeAllOf(userId), allIdsOf: (userId) => deps.devices.repos.devices.allIdsOf(userId) },
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
  return { repos: { accountDeletions: repo }, accounts };
}
export type AccountsArea = ReturnType<typeof accountsArea>;

// What other areas use of this one (they import only this file).
export type { AccountsService } from './accounts.service.js';
