import type { Job } from 'bullmq';
import type { AppContext } from '../../src/context.js';

/** Ring time over: a 1:1 call still ringing ends as missed; a room call stops ringing (or ends as missed). */
export function callTimeoutProcessor(ctx: AppContext) {
  return async (job: Job<{ callId: string }>) => {
    await Promise.all([ctx.services.calls.timeout(job.data.callId), ctx.services.roomCalls.timeout(job.data.callId)]);
  };
}
