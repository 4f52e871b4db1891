import type { Job } from 'bullmq';
import type { AppContext } from '../../src/context.js';
import type { SummaryJob } from '../../src/summaries/summaries.service.js';

/** Summarizes the conversation around a message and tells the requester's devices. */
export function summaryProcessor(ctx: AppContext) {
  return async (job: Job<SummaryJob>) => ctx.services.summaries.run(job.data);
}
