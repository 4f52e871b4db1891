import { Queue, Worker } from 'bullmq';
import type { AppContext } from '../src/context.js';
import type { PushRequest } from '../src/platform/device-events.js';
import type { SummaryJob } from '../src/summaries/summaries.service.js';
import { CLEANUP_EVERY_MS, JOBS, QUEUES, queuePrefix } from '../src/platform/queues.js';
import { callTimeoutProcessor } from './processors/call-timeout.processor.js';
import { cleanupProcessor } from './processors/cleanup.processor.js';
import { mediaProcessor } from './processors/media.processor.js';
import { pushProcessor } from './processors/push.processor.js';
import { summaryProcessor } from './processors/summary.processor.js';

export interface Workers {
  close(): Promise<void>;
}

/** The worker role: BullMQ workers over the shared queues, and the schedules they run on. */
export async function startWorkers(ctx: AppContext): Promise<Workers> {
  const log = ctx.logger.child({ role: 'worker' });
  const connection = ctx.redis.duplicate();
  const prefix = queuePrefix(ctx.config.REDIS_PREFIX);

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
  const push = new Worker<PushRequest>(QUEUES.push, pushProcessor(ctx), { connection, prefix, concurrency: 20 });
  const calls = new Worker<{ callId: string }>(QUEUES.calls, callTimeoutProcessor(ctx), { connection, prefix, concurrency: 20 });
  // Media work is CPU-bound (sharp, ffmpeg): two at a time per worker process.
  const media = new Worker<{ attachmentId: string }>(QUEUES.media, mediaProcessor(ctx), { connection, prefix, concurrency: 2 });
  const summaries = new Worker<SummaryJob>(QUEUES.summaries, summaryProcessor(ctx), { connection, prefix, concurrency: 2 });
  const all = [worker, push, calls, media, summaries];
  for (const w of all) {
    w.on('completed', (job, result) => log.debug({ queue: w.name, job: job.name, result }, 'job done'));
    w.on('failed', (job, error) => log.error({ queue: w.name, job: job?.name, err: error }, 'job failed'));
  }
  log.info({ queues: Object.values(QUEUES) }, 'workers running');

  return {
    async close() {
      await Promise.all(all.map((w) => w.close()));
      await maintenance.close();
      await connection.quit().catch(() => undefined);
    },
  };
}
