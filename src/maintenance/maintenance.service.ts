import type { AuthService } from '../auth/index.js';
import type { AnyCallService } from '../calls/index.js';
import type { EncryptedUploadsService } from '../e2ee/index.js';
import type { InvocationsService, WebhooksService } from '../apps/index.js';
import type { MessageChangesService } from '../messages/index.js';
/**
 * Scheduled clean-ups and reconcilers: nothing may rely on TTL indexes (docs/contributors/decisions.md),
 * and a ring timeout whose job was lost (Redis restored from an old snapshot) still ends its call.
 */
export class MaintenanceService {
  constructor(
    private readonly deps: {
      auth: AuthService;
      calls: AnyCallService;
      encryptedUploads: Pick<EncryptedUploadsService, 'deleteUnused'>;
      webhooks: Pick<WebhooksService, 'deleteOldActivity'>;
      invocations: Pick<InvocationsService, 'deleteOldForms'>;
      messages: Pick<MessageChangesService, 'finishStalledRemovals'>;
    },
  ) {}

  /**
   * Removes rows whose life ended, finishes overdue calls, ends room calls whose media server went
   * away, deletes encrypted uploads no message took and apps' activity rows, finished deliveries and
   * forms past 30 days; returns how
   * many, by kind.
   */
  async cleanupExpired(now: Date): Promise<{ loginCodes: number; missedCalls: number; orphanedRoomCalls: number; unusedEncryptedUploads: number; appActivity: number; appDeliveries: number; appForms: number; unfinishedDeletions: number }> {
    const loginCodes = await this.deps.auth.deleteExpiredCodes(now);
    const calls = await this.deps.calls.cleanUp(now);
    const unusedEncryptedUploads = await this.deps.encryptedUploads.deleteUnused(now);
    const { activity: appActivity, deliveries: appDeliveries } = await this.deps.webhooks.deleteOldActivity(now);
    const appForms = await this.deps.invocations.deleteOldForms(now);
    // Deletions for everyone that a dead process left midway: their follow-ups finished.
    const unfinishedDeletions = await this.deps.messages.finishStalledRemovals(now);
    return { loginCodes, ...calls, unusedEncryptedUploads, appActivity, appDeliveries, appForms, unfinishedDeletions };
  }
}
