import type { Platform } from '../platform/platform.js';
import { UsersRepo } from './users.repo.js';
import { UsersService } from './users.service.js';

/** Users: profiles, two-factor, site administrators. */
export function usersArea(p: Platform) {
  const repo = new UsersRepo(p.db);
  return {
    repos: { users: repo },
    users: new UsersService(
      repo,
      {
        adminPhones: p.config.ADMIN_PHONES,
        totpIssuer: p.config.TOTP_ISSUER,
        wrongCodes: { max: p.config.LOGIN_CODE_MAX_ATTEMPTS, windowSeconds: p.config.LOGIN_CODE_WINDOW, ephemeral: p.ephemeral, key: p.keys.users.twoFactorWrong },
      },
      p.clock,
    ),
  };
}
export type UsersArea = ReturnType<typeof usersArea>;
