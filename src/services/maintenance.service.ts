import type { LoginCodesRepo } from '../repos/login-codes.repo.js';

/** Scheduled clean-ups: nothing may rely on TTL indexes (DESIGN.md, "Data rules"). */
export class MaintenanceService {
  constructor(private readonly loginCodes: LoginCodesRepo) {}

  /** Removes rows whose life ended; returns how many went, by kind. */
  async cleanupExpired(now: Date): Promise<{ loginCodes: number }> {
    return { loginCodes: await this.loginCodes.deleteExpired(now) };
  }
}
