import { narrow } from '../platform/narrow.js';
import { uploadStagingDir } from '../platform/storage/upload-staging.js';
import { publicBaseUrl } from '../platform/config.js';
import type { Platform } from '../platform/platform.js';
import { UsersRepo } from './users.repo.js';
import { UsersService } from './users.service.js';
import { AvatarsService } from './avatars.service.js';

/** Users: profiles, profile pictures, two-factor, site administrators. */
export function usersArea(p: Platform) {
  const repo = new UsersRepo(p.db);
  const baseUrl = publicBaseUrl(p.config);
  /** The user's profile and settings for their data export (docs/clients/people.md, "Exporting your data"). */
  const exportOf = async (userId: string) => {
    const user = await repo.findById(userId);
    if (!user) return null;
    return {
      id: user._id,
      phone: user.phone,
      email: user.emailConfirmedAt ? (user.email ?? null) : null,
      displayName: user.displayName,
      language: user.language,
      roomInvites: user.roomInvites ?? 'everyone',
      readReceipts: user.readReceipts !== false,
      notifications: user.notifications ? { doNotDisturbUntil: user.notifications.doNotDisturbUntil?.toISOString() ?? null, quietHours: user.notifications.quietHours, callsFromConnections: user.notifications.callsFromConnections } : null,
      twoFactorEnabled: user.twoFactor.enabled,
      profilePicture: user.avatar ? { version: user.avatar.version, updatedAt: user.avatar.updatedAt.toISOString() } : null,
      createdAt: user.createdAt.toISOString(),
    };
  };
  return {
    exportOf,
    repos: { users: repo },
    // What other areas may do with users, each a small interface of its own (never the repository).
    reads: narrow(repo, ['findById', 'findManyByIds', 'findByPhone', 'findByEmail']),
    /** Sign-in finds or creates the account of a number, and spends a two-factor code's time step once. */
    signIn: narrow(repo, ['findById', 'findOrCreateByPhone', 'claimTotpStep']),
    /** Account deletion marks the account deleted and empties its profile. */
    accountStates: narrow(repo, ['findById', 'markDeleted', 'eraseProfile']),
    /** Moderation suspends and restores accounts. */
    suspensions: narrow(repo, ['findById', 'setSuspension']),
    publicBaseUrl: baseUrl,
    avatars: new AvatarsService({ users: repo, storage: () => p.storage, stagingDir: uploadStagingDir(p.config), clock: p.clock }),
    users: new UsersService(
      repo,
      {
        adminPhones: p.config.ADMIN_PHONES,
        totpIssuer: p.config.TOTP_ISSUER,
        publicBaseUrl: baseUrl,
        wrongCodes: { max: p.config.LOGIN_CODE_MAX_ATTEMPTS, windowSeconds: p.config.LOGIN_CODE_WINDOW, ephemeral: p.ephemeral, key: p.keys.users.twoFactorWrong },
        get mail() {
          return p.email;
        },
        domainEvents: p.domainEvents,
      },
      p.clock,
    ),
  };
}
export type UsersArea = ReturnType<typeof usersArea>;

// What other areas use of this one (they import only this file).
export type { RoomInvitesSetting, UserDoc } from './users.repo.js';
export { userSummary } from './users.service.js';
export { matchTotpStep } from './totp.js';
export type { UserSummaryView } from './users.service.js';

export { callRings, quietNow, type NotificationSettings } from './quiet.js';
/** What other areas read of users: by id (one or many), phone or e-mail. */
export type UserReads = UsersArea['reads'];
export type UserSignIn = UsersArea['signIn'];
export type UserAccountStates = UsersArea['accountStates'];
export type UserSuspensions = UsersArea['suspensions'];
