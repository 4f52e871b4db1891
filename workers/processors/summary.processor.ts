import type { Job } from 'bullmq';
import type { SummaryJob } from '../../src/platform/queues.js';
import type { SummariesService } from '../../src/summaries/summaries.service.js';

/** Summarizes the conversation around a message and tells the requester's devices. */
export function summaryProcessor(summaries: SummariesService) {
  return async (job: Job<SummaryJob>) => summaries.run(job.data);
}
