import { createHash } from 'node:crypto';
import { Queue } from 'bullmq';
import { GroupWriter } from './group-writer.js';
import type { RedisClient } from './redis.js';
import { closeRedis, duplicate } from './redis.js';

/** Payloads hold ids only; the processor reads the rest (and nothing secret rides in Redis). */
export interface PushJob {
  deviceId: string;
  seq: number;
  kind: 'alert' | 'voip';
}
/** A short stable name for a set of newly mentioned members (a job id part: the same edit queued twice is one job). */
function mentionKey(userIds: string[]): string {
  return createHash('sha256').update([...userIds].sort().join(',')).digest('base64url').slice(0, 16);
}

/** A new message to push to the room's members who did not get it live (ids only). */
export interface MessagePushJob {
  messageId: string;
  /** The message was deleted: its push goes again, saying so, under the same collapse key (the room). */
  replacement?: boolean;
  /** One part of a large room's fan-out: these members only (the post's job splits it so every worker takes parts). */
  part?: { index: number; memberIds: string[] };
  /** Members an edit newly mentioned: pushed the mention once (its own delivery), nobody else. */
  mentioned?: string[];
}
export interface CallTimeoutJob {
  callId: string;
}
export interface MediaJob {
  attachmentId: string;
}
export interface AccountEraseJob {
  userId: string;
}

export interface AccountExportJob {
  exportId: string;
}

export interface SummaryJob {
  requestId: string;
  userId: string;
  messageId: string;
  language: string;
}
export type CleanupJob = Record<string, never>;
/**
 * One attempt of a recorded delivery: its ids, and for the first attempt what the worker needs to make
 * it without reading the record (see WebhooksService.enqueue). The body rides sealed: a payment
 * event's amounts never ride in Redis in the clear.
 */
export interface WebhookJob {
  deliveryId: string;
  attempt: number;
  round: number;
  first?: {
    appId: string;
    event: string;
    retry: boolean;
    /** The body, JSON text, sealed (AES-256-GCM under the service's secrets key). */
    sealed: string;
    /** When the delivery was recorded with this attempt held for the job (ms since 1970). */
    recordedAt: number;
  };
}
/** Ids only: the worker reads the withdrawal (no addresses or amounts in job data). */
export interface WithdrawalJob {
  withdrawalId: string;
}
export interface InvitationJob {
  requestId: string;
  /** Tells apart a fresh round of tries from one that gave up (their job ids differ). */
  round: number;
}

export interface QueueDefinition<T> {
  /** BullMQ queue name. */
  queue: string;
  /** Job name within the queue. */
  job: string;
  attempts: number;
  backoff: { type: 'fixed' | 'exponential'; delay: number };
  /** Jobs of this queue one worker process runs at once. */
  concurrency: number;
  /** The job id that makes adding the same work twice a no-op. */
  jobId?: (data: T) => string;
  /** Repeats every so many milliseconds, scheduled once across all workers. */
  everyMs?: number;
  /** A job that names a person (an account being erased): removed from Redis once done or given up, not kept among the last finished. */
  forgetWhenDone?: boolean;
}

const defineQueue = <T>(definition: QueueDefinition<T>): QueueDefinition<T> => definition;

/** Every queue, in one place: its name, payload, retries and concurrency. */
export const QUEUES = {
  withdrawals: defineQueue<WithdrawalJob>({ queue: 'withdrawals', job: 'send-withdrawal', attempts: 5, backoff: { type: 'exponential', delay: 2_000 }, concurrency: 4, jobId: (data) => `withdrawal-${data.withdrawalId}` }),
  withdrawalSweep: defineQueue<CleanupJob>({ queue: 'withdrawal-sweep', job: 'sweep-withdrawals', attempts: 1, backoff: { type: 'fixed', delay: 1_000 }, concurrency: 1, everyMs: 2_000 }),
  swaps: defineQueue<CleanupJob>({ queue: 'swaps', job: 'fill-swaps', attempts: 1, backoff: { type: 'fixed', delay: 1_000 }, concurrency: 1, everyMs: 5_000 }),
  paymentRequests: defineQueue<CleanupJob>({ queue: 'payment-requests', job: 'sweep-payment-requests', attempts: 1, backoff: { type: 'fixed', delay: 1_000 }, concurrency: 1, everyMs: 30_000 }),
  deposits: defineQueue<CleanupJob>({ queue: 'deposits', job: 'scan-deposits', attempts: 1, backoff: { type: 'fixed', delay: 1_000 }, concurrency: 1, everyMs: 2_000 }),
  wallets: defineQueue<CleanupJob>({ queue: 'wallets', job: 'reconcile', attempts: 1, backoff: { type: 'fixed', delay: 1_000 }, concurrency: 1, everyMs: 60_000 }),
  // Calls to apps' webhooks: one attempt per job; the service schedules the next attempt itself.
  webhooks: defineQueue<WebhookJob>({ queue: 'webhooks', job: 'deliver', attempts: 1, backoff: { type: 'fixed', delay: 1_000 }, concurrency: 64, jobId: (data) => `${data.deliveryId}-${data.attempt}-${data.round}` }),
  // In-chat payments: expiry, and payments a crash left between their steps.
  appPayments: defineQueue<CleanupJob>({ queue: 'app-payments', job: 'sweep-app-payments', attempts: 1, backoff: { type: 'fixed', delay: 1_000 }, concurrency: 1, everyMs: 15_000 }),
  // Health checks of apps used in the last 24 hours (spec, "Limits": every 5 minutes).
  appHealth: defineQueue<CleanupJob>({ queue: 'app-health', job: 'ping-apps', attempts: 1, backoff: { type: 'fixed', delay: 1_000 }, concurrency: 1, everyMs: 300_000 }),
  maintenance: defineQueue<CleanupJob>({ queue: 'maintenance', job: 'cleanup-expired', attempts: 1, backoff: { type: 'fixed', delay: 1_000 }, concurrency: 1, everyMs: 60_000 }),
  push: defineQueue<PushJob>({
    queue: 'push',
    job: 'push',
    attempts: 5,
    backoff: { type: 'exponential', delay: 2_000 },
    concurrency: 20,
    // The device's sequence number makes one push per stored event.
    jobId: (data) => `${data.deviceId}-${data.seq}`,
  }),
  // One job per post fans its push out to the room's offline members, in batches; a large room's job
  // queues parts of its members (their own jobs, under ids of their own), which every worker takes.
  messagePush: defineQueue<MessagePushJob>({
    queue: 'message-push',
    job: 'push-message',
    // A part run again skips the devices it reached (the delivered log): retried for about a minute.
    attempts: 6,
    backoff: { type: 'exponential', delay: 2_000 },
    concurrency: 4,
    jobId: (data) => `message-${data.messageId}${data.replacement ? '-replacement' : ''}${data.part ? `-part-${data.part.index}` : ''}${data.mentioned ? `-mention-${mentionKey(data.mentioned)}` : ''}`,
  }),
  calls: defineQueue<CallTimeoutJob>({ queue: 'calls', job: 'call-timeout', attempts: 3, backoff: { type: 'fixed', delay: 1_000 }, concurrency: 20, jobId: (data) => `timeout-${data.callId}` }),
  // Media work is CPU-bound (sharp, ffmpeg): two at a time per worker process.
  media: defineQueue<MediaJob>({ queue: 'media', job: 'process-attachment', attempts: 3, backoff: { type: 'exponential', delay: 2_000 }, concurrency: 2, jobId: (data) => `media-${data.attachmentId}` }),
  // Invitations by SMS or e-mail, sent from their stored record: retried for about an hour and a half.
  invitations: defineQueue<InvitationJob>({ queue: 'invitations', job: 'send-invitation', attempts: 10, backoff: { type: 'exponential', delay: 5_000 }, concurrency: 5, jobId: (data) => `invite-${data.requestId}-${data.round}` }),
  // Erasing a deleted account, step by step; and the sweep that finishes one a dead process left midway.
  accountErase: defineQueue<AccountEraseJob>({ queue: 'account-erase', job: 'erase-account', attempts: 5, backoff: { type: 'exponential', delay: 2_000 }, concurrency: 2, jobId: (data) => `erase-${data.userId}`, forgetWhenDone: true }),
  accountExport: defineQueue<AccountExportJob>({ queue: 'account-export', job: 'build-export', attempts: 3, backoff: { type: 'exponential', delay: 5_000 }, concurrency: 1, jobId: (data) => `export-${data.exportId}` }),
  accountEraseSweep: defineQueue<CleanupJob>({ queue: 'account-erase-sweep', job: 'sweep-account-erasures', attempts: 1, backoff: { type: 'fixed', delay: 1_000 }, concurrency: 1, everyMs: 60_000 }),
  summaries: defineQueue<SummaryJob>({ queue: 'summaries', job: 'summarize', attempts: 3, backoff: { type: 'exponential', delay: 2_000 }, concurrency: 2, jobId: (data) => data.requestId }),
} as const;

export type QueueName = keyof typeof QUEUES;

/** A job as BullMQ's addBulk takes it. */
interface JobToAdd {
  name: string;
  data: unknown;
  opts: { jobId?: string; delay?: number };
}

/**
 * Adds jobs to the queues above. Each BullMQ queue is opened on first use over one connection of
 * its own (BullMQ does not close a connection it was given: `close` quits it).
 */
export class Queues {
  private readonly open = new Map<string, Queue>();
  private readonly adders = new Map<string, GroupWriter<JobToAdd, void>>();
  private connection: RedisClient | null = null;

  constructor(
    /** The queues role's Redis (REDIS_QUEUES_URL, else the state's): BullMQ's connections are its duplicates. */
    readonly redis: RedisClient,
    /** BullMQ's key prefix of a queue (the keyspace's `queuePrefix`: one hash tag per queue). */
    readonly prefixOf: (queue: string) => string,
    /** Applied to the queues' own connection (DependencyHealth's guard). */
    private readonly prepare: (connection: RedisClient) => RedisClient = (connection) => connection,
  ) {}

  private queueOf<T>(definition: QueueDefinition<T>): Queue {
    let queue = this.open.get(definition.queue);
    if (!queue) {
      this.connection ??= this.prepare(duplicate(this.redis));
      queue = new Queue(definition.queue, {
        connection: this.connection,
        prefix: this.prefixOf(definition.queue),
        defaultJobOptions: { attempts: definition.attempts, backoff: definition.backoff, removeOnComplete: definition.forgetWhenDone ? true : 1000, removeOnFail: definition.forgetWhenDone ? true : 1000 },
      });
      // Connection errors while Redis is away are the client's (a refused add answers 503); not printed here.
      queue.on('error', () => undefined);
      this.open.set(definition.queue, queue);
    }
    return queue;
  }

  /**
   * Adds a job. Jobs added to one queue while others are being sent go together in the next group, as
   * one pipelined write (GroupWriter, BullMQ's addBulk); alone a job goes at once. A group refused by
   * Redis refuses each of its jobs.
   */
  async add<T>(definition: QueueDefinition<T>, data: T, options: { delayMs?: number } = {}): Promise<void> {
    await this.adderOf(definition).add({
      name: definition.job,
      data,
      opts: {
        ...(definition.jobId ? { jobId: definition.jobId(data) } : {}),
        ...(options.delayMs !== undefined ? { delay: options.delayMs } : {}),
      },
    });
  }

  private adderOf<T>(definition: QueueDefinition<T>): GroupWriter<JobToAdd, void> {
    let adder = this.adders.get(definition.queue);
    if (!adder) {
      const queue = this.queueOf(definition);
      adder = new GroupWriter<JobToAdd, void>(async (group) => {
        const [single] = group;
        if (single && group.length === 1) await queue.add(single.item.name, single.item.data, single.item.opts);
        else await queue.addBulk(group.map(({ item }) => item));
        for (const waiter of group) waiter.resolve();
      });
      this.adders.set(definition.queue, adder);
    }
    return adder;
  }

  /** Jobs waiting to run (not yet started) in the definition's queue. */
  backlog<T>(definition: QueueDefinition<T>): Promise<number> {
    return this.queueOf(definition).getJobCountByTypes('waiting', 'delayed', 'prioritized');
  }

  async close(): Promise<void> {
    await Promise.allSettled([...this.open.values()].map((queue) => queue.close()));
    if (this.connection) await closeRedis(this.connection);
  }
}
