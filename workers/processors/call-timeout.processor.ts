import type { Job } from 'bullmq';
import type { AnyCallService } from '../../src/calls/any-call.service.js';
import type { CallTimeoutJob } from '../../src/platform/queues.js';

/** Ring time over: a 1:1 call still ringing ends as missed; a room call stops ringing (or ends as missed). */
export function callTimeoutProcessor(calls: AnyCallService) {
  return async (job: Job<CallTimeoutJob>) => calls.timeout(job.data.callId);
}
