import { Queue, Worker } from 'bullmq';
import type { AppContext } from '../src/context.js';
import { CLEANUP_EVERY_MS, JOBS, QUEUES } from '../src/queues.js';
import { cleanupProcessor } from './processors/cleanup.processor.js';

export interface Workers {
  close(): Promise<void>;
}

/** The worker role: BullMQ workers over the shared queues, and the schedules they run on. */
export async function startWorkers(ctx: AppContext): Promise<Workers> {
  const log = ctx.logger.child({ role: 'worker' });
  const connection = ctx.redis.duplicate();
  const prefix = `${ctx.config.REDIS_PREFIX}bull`;

  const maintenance = new Queue(QUEUES.maintenance, { connection, prefix });
  await maintenance.upsertJobScheduler(JOBS.cleanupExpired, { every: CLEANUP_EVERY_MS }, { name: JOBS.cleanupExpired, opts: { removeOnComplete: 100, removeOnFail: 100 } });

  const cleanup = cleanupProcessor(ctx);
  const worker = new Worker(
    QUEUES.maintenance,
    async (job) => {
      if (job.name === JOBS.cleanupExpired) return cleanup();
      throw new Error(`unknown job ${job.name}`);
    },
    { connection, prefix, concurrency: 1 },
  );
  worker.on('completed', (job, result) => log.debug({ job: job.name, result }, 'job done'));
  worker.on('failed', (job, error) => log.error({ job: job?.name, err: error }, 'job failed'));
  log.info({ queues: Object.values(QUEUES) }, 'workers running');

  return {
    async close() {
      await worker.close();
      await maintenance.close();
      await connection.quit().catch(() => undefined);
    },
  };
}
