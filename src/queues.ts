/** Queue names and job names, shared by the code that enqueues and the workers that process. */
export const QUEUES = {
  maintenance: 'maintenance',
} as const;

export const JOBS = {
  cleanupExpired: 'cleanup-expired',
} as const;

/** How often the clean-up runs. */
export const CLEANUP_EVERY_MS = 60_000;
