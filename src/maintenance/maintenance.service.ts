import type { CallsRepo } from '../calls/calls.repo.js';
import type { LoginCodesRepo } from '../auth/login-codes.repo.js';
import type { CallsService } from '../calls/calls.service.js';
import type { RoomCallsService } from '../calls/room-calls.service.js';

/**
 * Scheduled clean-ups and reconcilers: nothing may rely on TTL indexes (DESIGN.md, "Data rules"),
 * and a ring timeout whose job was lost (Redis restored from an old snapshot) still ends its call.
 */
export class MaintenanceService {
  constructor(
    private readonly loginCodes: LoginCodesRepo,
    private readonly callsRepo: CallsRepo,
    private readonly calls: CallsService,
    private readonly roomCalls: RoomCallsService,
  ) {}

  /**
   * Removes rows whose life ended, finishes overdue calls, and ends room calls whose media server
   * went away; returns how many, by kind.
   */
  async cleanupExpired(now: Date): Promise<{ loginCodes: number; missedCalls: number; orphanedRoomCalls: number }> {
    const loginCodes = await this.loginCodes.deleteExpired(now);
    const due = await this.callsRepo.ringingDue(now);
    for (const call of due) await this.calls.timeout(call._id);
    const orphanedRoomCalls = await this.roomCalls.endOrphaned();
    return { loginCodes, missedCalls: due.length, orphanedRoomCalls };
  }
}
