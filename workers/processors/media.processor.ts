import type { Job } from 'bullmq';
import type { AppContext } from '../../src/context.js';

/** Thumbnails, MP4 conversion and posters for one uploaded file; storage errors throw and are retried. */
export function mediaProcessor(ctx: AppContext) {
  return async (job: Job<{ attachmentId: string }>) => ctx.services.media.process(job.data.attachmentId);
}
