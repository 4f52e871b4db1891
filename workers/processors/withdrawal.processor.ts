import type { Job } from 'bullmq';
import type { WithdrawalJob } from '../../src/platform/queues.js';
import type { WithdrawalsService } from '../../src/wallets/withdrawals.service.js';

/** Signs, stores and broadcasts one withdrawal (see WithdrawalsService.send): safe to repeat. */
export function withdrawalProcessor(withdrawals: WithdrawalsService) {
  return async (job: Job<WithdrawalJob>) => withdrawals.send(job.data.withdrawalId);
}

/** Confirms, refunds and resends withdrawals (see WithdrawalsService.sweep). */
export function withdrawalSweepProcessor(withdrawals: WithdrawalsService) {
  return async () => withdrawals.sweep();
}
