import type { Job } from 'bullmq';
import type { PushJob } from '../../src/platform/queues.js';
import type { PushService } from '../../src/push/push.service.js';

/** Pushes one stored device event to an offline device; retryable failures throw and BullMQ retries. */
export function pushProcessor(push: PushService) {
  return async (job: Job<PushJob>) => push.deliver(job.data);
}
