import type { Job } from 'bullmq';
import type { MediaService } from '../../src/attachments/media.service.js';
import type { MediaJob } from '../../src/platform/queues.js';

/** Thumbnails, MP4 conversion and posters for one uploaded file; storage errors throw and are retried. */
export function mediaProcessor(media: MediaService) {
  return async (job: Job<MediaJob>) => media.process(job.data.attachmentId);
}
