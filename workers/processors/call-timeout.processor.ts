import type { Job } from 'bullmq';
import type { AppContext } from '../../src/context.js';

/** Ends a call that is still ringing when its ring time is over, as missed. */
export function callTimeoutProcessor(ctx: AppContext) {
  return async (job: Job<{ callId: string }>) => ctx.services.calls.timeout(job.data.callId);
}
