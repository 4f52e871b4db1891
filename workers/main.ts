import { Queue, Worker, type Job } from 'bullmq';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { Services } from '../src/composition.js';
import type { Platform } from '../src/platform/platform.js';
import { QUEUES, type QueueDefinition, type QueueName } from '../src/platform/queues.js';
import { blockingConnection, closeRedis } from '../src/platform/redis.js';
import { SFU_WATCH_EVERY_MS } from '../src/sfu/index.js';
import { callTimeoutProcessor } from './processors/call-timeout.processor.js';
import { cleanupProcessor } from './processors/cleanup.processor.js';
import { appHealthProcessor, appPaymentsProcessor, webhookProcessor } from './processors/webhooks.processor.js';
import { reconcileProcessor } from './processors/reconcile.processor.js';
import { withdrawalProcessor, withdrawalSweepProcessor } from './processors/withdrawal.processor.js';
import { depositScanProcessor, paymentRequestSweepProcessor, swapFillProcessor } from './processors/deposit.processor.js';
import { invitationProcessor } from './processors/invitation.processor.js';
import { mediaProcessor } from './processors/media.processor.js';
import { pushProcessor } from './processors/push.processor.js';
import { summaryProcessor } from './processors/summary.processor.js';

/** At most one connection warning line this often, while Redis is away. */
const WARNING_EVERY_MS = 10_000;

/**
 * Runs `work` every `everyMs`, skipping a tick while the last run is still going (a slow Redis never
 * piles runs up); its failures go to `failed`. The timer does not keep the process alive.
 */
function repeat(everyMs: number, work: () => Promise<void>, failed: (error: unknown) => void): NodeJS.Timeout {
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    work()
      .catch(failed)
      .finally(() => (running = false));
  }, everyMs);
  timer.unref();
  return timer;
}

/** What the role keeps of each BullMQ worker. */
interface RunningWorker {
  readonly name: string;
  close(): Promise<void>;
}

export interface Workers {
  close(): Promise<void>;
}

/** The worker role: a BullMQ worker per queue definition (src/platform/queues.ts), and the repeating schedules. */
export async function startWorkers(platform: Pick<Platform, 'logger' | 'redis' | 'keys' | 'config' | 'queues'>, services: Services, metrics?: Registry): Promise<Workers> {
  const log = platform.logger.child({ role: 'worker' });
  const registers = metrics ? [metrics] : [];
  const jobs = new Counter({ name: 'worker_jobs_total', help: 'Jobs this worker finished, by queue and outcome (done, failed: a failed attempt BullMQ may retry)', labelNames: ['queue', 'outcome'], registers });
  const durations = new Histogram({
    name: 'worker_job_duration_seconds',
    help: 'How long this worker took over each job, by queue and outcome',
    labelNames: ['queue', 'outcome'],
    buckets: [0.005, 0.025, 0.1, 0.5, 1, 5, 30, 120],
    registers,
  });
  const timed = (queue: string, outcome: 'done' | 'failed', job: Job | undefined) => {
    if (job?.processedOn && job.finishedOn) durations.observe({ queue, outcome }, (job.finishedOn - job.processedOn) / 1000);
  };
  new Gauge({
    name: 'worker_queue_depth',
    help: 'Jobs waiting to run (waiting, delayed, prioritized) per queue, shared by every worker node',
    labelNames: ['queue'],
    registers,
    async collect() {
      // Cast: backlog() reads counts only; the job type does not matter.
      const depths = await Promise.allSettled(Object.values(QUEUES).map(async (definition) => [definition.queue, await platform.queues.backlog(definition as QueueDefinition<unknown>)] as const));
      for (const depth of depths) if (depth.status === 'fulfilled') this.set({ queue: depth.value[0] }, depth.value[1]);
    },
  });
  // While Redis is away every queue and worker reports each failed reconnection: one line per
  // WARNING_EVERY_MS for all of them, with how many were held back, not dozens a second.
  let lastWarning = 0;
  let heldBack = 0;
  const connectionWarning = (source: string, error: unknown) => {
    const now = Date.now();
    if (now - lastWarning < WARNING_EVERY_MS) {
      heldBack++;
      return;
    }
    log.warn({ source, err: error, heldBack }, 'worker connection error (Redis away?)');
    lastWarning = now;
    heldBack = 0;
  };
  const connection = blockingConnection(platform.queues.redis);
  const schedulers: { queue: Queue; schedule: () => Promise<unknown>; job: string }[] = [];

  async function start<T>(definition: QueueDefinition<T>, process: (job: Job<T>) => Promise<unknown>): Promise<RunningWorker> {
    if (definition.everyMs) {
      // Scheduled once across all workers: the scheduler id is the job name.
      const queue = new Queue(definition.queue, { connection, prefix: platform.keys.queuePrefix(definition.queue) });
      queue.on('error', (error) => connectionWarning(definition.queue, error));
      const every = definition.everyMs;
      const schedule = () => queue.upsertJobScheduler(definition.job, { every }, { name: definition.job, opts: { removeOnComplete: 100, removeOnFail: 100 } });
      await schedule();
      schedulers.push({ queue, schedule, job: definition.job });
    }
    const worker = new Worker<T>(
      definition.queue,
      async (job) => {
        if (job.name !== definition.job) throw new Error(`unknown job ${job.name}`);
        return process(job);
      },
      // A job whose worker died (its lock not renewed for WORKER_LOCK_MS) is found by the stalled check and run again.
      { connection, prefix: platform.keys.queuePrefix(definition.queue), concurrency: definition.concurrency, lockDuration: platform.config.WORKER_LOCK_MS, stalledInterval: platform.config.WORKER_LOCK_MS },
    );
    // Connection errors while Redis is away: BullMQ reconnects by itself.
    worker.on('error', (error) => connectionWarning(worker.name, error));
    worker.on('completed', (job, result) => {
      jobs.inc({ queue: worker.name, outcome: 'done' });
      timed(worker.name, 'done', job);
      log.debug({ queue: worker.name, job: job.name, result }, 'job done');
    });
    worker.on('failed', (job, error) => {
      jobs.inc({ queue: worker.name, outcome: 'failed' });
      timed(worker.name, 'failed', job);
      log.error({ queue: worker.name, job: job?.name, err: error }, 'job failed');
    });
    return worker;
  }

  // One processor per queue, a few lines each: job data holds ids, the processor calls one service function.
  const started = {
    maintenance: await start(QUEUES.maintenance, cleanupProcessor(services.maintenance)),
    appHealth: await start(QUEUES.appHealth, appHealthProcessor(services.appWebhooks)),
    webhooks: await start(QUEUES.webhooks, webhookProcessor(services.appWebhooks)),
    appPayments: await start(QUEUES.appPayments, appPaymentsProcessor(services.appPayments)),
    wallets: await start(QUEUES.wallets, reconcileProcessor(services.walletsReconciler)),
    withdrawals: await start(QUEUES.withdrawals, withdrawalProcessor(services.withdrawals)),
    withdrawalSweep: await start(QUEUES.withdrawalSweep, withdrawalSweepProcessor(services.withdrawals)),
    deposits: await start(QUEUES.deposits, depositScanProcessor(services.deposits)),
    swaps: await start(QUEUES.swaps, swapFillProcessor(services.swaps)),
    paymentRequests: await start(QUEUES.paymentRequests, paymentRequestSweepProcessor(services.paymentRequests)),
    push: await start(QUEUES.push, pushProcessor(services.push)),
    messagePush: await start(QUEUES.messagePush, async (job) => services.messagePush.fanOut(job.data)),
    calls: await start(QUEUES.calls, callTimeoutProcessor(services.anyCall)),
    media: await start(QUEUES.media, mediaProcessor(services.media)),
    summaries: await start(QUEUES.summaries, summaryProcessor(services.summaries)),
    accountErase: await start(QUEUES.accountErase, async (job) => services.accounts.erase(job.data.userId)),
    accountEraseSweep: await start(QUEUES.accountEraseSweep, async () => {
      await services.accounts.sweep();
      await services.accountExports.sweep();
    }),
    accountExport: await start(QUEUES.accountExport, async (job) => services.accountExports.build(job.data.exportId)),
    invitations: await start(QUEUES.invitations, invitationProcessor(services.contacts)),
  } satisfies Record<QueueName, RunningWorker>;
  const workers: RunningWorker[] = Object.values(started);
  log.info({ queues: workers.map((worker) => worker.name) }, 'workers running');
  // Room calls whose media node died or lost its mediasoup worker end as FAILED within seconds. A
  // timer, not a queue: each look is two Redis reads, and every worker node may look (ending is idempotent).
  const watchMedia = repeat(
    SFU_WATCH_EVERY_MS,
    async () => {
      const ended = await services.roomCalls.endLostMedia();
      if (ended > 0) log.warn({ ended }, 'room calls ended: their media node or worker is gone');
    },
    (error) => connectionWarning('room-call media watch', error),
  );
  // The repeating schedules live in Redis: a Redis that came back empty (no append-only file, a
  // failover to an empty replica) would leave the sweeps, the scans and the reconciler unscheduled
  // until a worker restarts. Each worker puts back what is missing (upserting is idempotent).
  const restored = new Counter({ name: 'worker_schedules_restored_total', help: 'Repeating schedules this worker found missing from Redis and put back', registers });
  const checkSchedules = repeat(
    platform.config.WORKER_SCHEDULE_CHECK_MS,
    async () => {
      for (const { queue, schedule, job } of schedulers) {
        if (await queue.getJobScheduler(job)) continue;
        await schedule();
        restored.inc();
        log.warn({ queue: queue.name, job }, 'a repeating schedule was missing from Redis: put back');
      }
    },
    (error) => log.debug({ err: error }, 'schedule check failed (Redis away?)'),
  );

  return {
    async close() {
      clearInterval(watchMedia);
      clearInterval(checkSchedules);
      await Promise.all(workers.map((worker) => worker.close()));
      await Promise.all(schedulers.map(({ queue }) => queue.close()));
      await closeRedis(connection);
    },
  };
}
