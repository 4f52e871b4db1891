import type { Job } from 'bullmq';
import type { AppContext } from '../../src/context.js';
import type { PushRequest } from '../../src/platform/device-events.js';

/** Pushes one stored device event to an offline device; retryable failures throw and BullMQ retries. */
export function pushProcessor(ctx: AppContext) {
  return async (job: Job<PushRequest>) => ctx.services.push.deliver(job.data);
}
