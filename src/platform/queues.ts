/** Queue names and job names, shared by the code that enqueues and the workers that process. */
export const QUEUES = {
  maintenance: 'maintenance',
  push: 'push',
  calls: 'calls',
  media: 'media',
  summaries: 'summaries',
} as const;

export const JOBS = {
  cleanupExpired: 'cleanup-expired',
  push: 'push',
  callTimeout: 'call-timeout',
  processAttachment: 'process-attachment',
  summarize: 'summarize',
} as const;

/** BullMQ's key prefix for this deployment's queues. */
export const queuePrefix = (redisPrefix: string) => `${redisPrefix}bull`;

/** How often the clean-up runs. */
export const CLEANUP_EVERY_MS = 60_000;
