import { Queue } from 'bullmq';
import type { QueueDefinition } from '../../src/platform/queues.js';
import { duplicate } from '../../src/platform/redis.js';
import type { TestApp } from './app.js';

/** The jobs stored in the test app's Redis under these ids (null where none), read through BullMQ as a worker would. */
export async function queuedJobs<T>(t: TestApp, definition: QueueDefinition<T>, jobIds: string[]): Promise<({ name: string; data: T } | null)[]> {
  const connection = duplicate(t.ctx.platform.redis);
  const queue = new Queue(definition.queue, { connection, prefix: t.ctx.platform.queues.prefixOf(definition.queue) });
  try {
    const jobs = await Promise.all(jobIds.map((id) => queue.getJob(id)));
    // Cast: the job was added with this definition's data.
    return jobs.map((job) => (job ? { name: job.name, data: job.data as T } : null));
  } finally {
    await queue.close();
    connection.disconnect();
  }
}

/** How many jobs of a queue are in each state, read through BullMQ. */
export async function jobCounts<T>(t: TestApp, definition: QueueDefinition<T>): Promise<Record<'active' | 'waiting' | 'delayed' | 'completed' | 'failed', number>> {
  const connection = duplicate(t.ctx.platform.redis);
  const queue = new Queue(definition.queue, { connection, prefix: t.ctx.platform.queues.prefixOf(definition.queue) });
  try {
    const counts = await queue.getJobCounts('active', 'waiting', 'delayed', 'completed', 'failed');
    return { active: counts.active ?? 0, waiting: counts.waiting ?? 0, delayed: counts.delayed ?? 0, completed: counts.completed ?? 0, failed: counts.failed ?? 0 };
  } finally {
    await queue.close();
    connection.disconnect();
  }
}
