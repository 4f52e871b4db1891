import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Queue } from 'bullmq';
import { Cluster } from 'ioredis';
import { Registry } from 'prom-client';
import { startWorkers, type Workers } from '../../workers/main.js';
import type { RedisClient } from '../../src/platform/redis.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { until } from '../helpers/wait.js';
import { QUEUES } from '../../src/platform/queues.js';
import { queuedJobs } from '../helpers/queued.js';

/** Jobs added to one queue at the same moment go to Redis together (one pipelined write), each its own job. */
describe('queued jobs added together', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp();
  });
  after(() => t.close());

  it('sends jobs added at once in fewer writes than jobs, each stored once under its own id', async () => {
    const prototype = Queue.prototype as unknown as { addBulk: (...args: unknown[]) => Promise<unknown> };
    const addBulk = prototype.addBulk;
    let bulks = 0;
    prototype.addBulk = function (this: Queue, ...args: unknown[]) {
      bulks++;
      return addBulk.apply(this, args);
    };
    const ids = Array.from({ length: 20 }, (_, i) => `queued-together-${i}`);
    try {
      // The first goes alone at once; the others wait for it and go together. One id twice: one job.
      await Promise.all([...ids, ids[0] as string].map((messageId) => t.ctx.platform.queues.add(QUEUES.messagePush, { messageId })));
    } finally {
      prototype.addBulk = addBulk;
    }
    assert.ok(bulks >= 1 && bulks < ids.length, `${bulks} bulk writes for ${ids.length + 1} jobs`);
    const jobs = await queuedJobs(t, QUEUES.messagePush, ids.map((messageId) => `message-${messageId}`));
    assert.deepEqual(jobs.map((job) => job?.data.messageId), ids);
    assert.deepEqual(jobs.map((job) => job?.name), ids.map(() => QUEUES.messagePush.job));
  });
});

/** A Redis that comes back empty under a running worker: the worker puts its repeating schedules back. */
describe('repeating schedules after Redis lost its data', () => {
  let t: TestApp;
  let workers: Workers;
  const metrics = new Registry();
  before(async () => {
    t = await startTestApp({ WORKER_SCHEDULE_CHECK_MS: '200' });
    workers = await startWorkers(t.ctx.platform, t.ctx.services, metrics);
  });
  after(async () => {
    await workers.close();
    await t.close();
  });

  it('every schedule is back within the check interval after every key of the service is gone', async () => {
    const scheduled = Object.values(QUEUES).filter((definition) => 'everyMs' in definition && definition.everyMs);
    const queues = scheduled.map((definition) => new Queue(definition.queue, { connection: t.ctx.platform.queues.redis, prefix: t.ctx.platform.keys.queuePrefix(definition.queue) }));
    try {
      const present = async () => (await Promise.all(queues.map((queue, i) => queue.getJobScheduler(scheduled[i]!.job)))).filter(Boolean).length;
      assert.equal(await present(), scheduled.length, 'scheduled at start');
      // As a restarted Redis without its append-only file: every key under the service's prefix gone.
      const restored = async () => (await metrics.getSingleMetric('worker_schedules_restored_total')!.get()).values[0]?.value ?? 0;
      assert.equal(await restored(), 0);
      const removed = await flushPrefix(t.ctx.platform.queues.redis, t.config.REDIS_PREFIX);
      assert.ok(removed > 0);
      // Every schedule is there again, each one put back by the worker (not left over from before).
      await until(async () => (await present()) === scheduled.length && (await restored()) >= scheduled.length, 'every schedule put back', 5_000);
    } finally {
      await Promise.all(queues.map((queue) => queue.close()));
    }
  });
});

/** Deletes every key starting with `prefix`, on one Redis or on every master of a cluster; how many. */
async function flushPrefix(redis: RedisClient, prefix: string): Promise<number> {
  const nodes = redis instanceof Cluster ? redis.nodes('master') : [redis];
  let removed = 0;
  for (const node of nodes) {
    for await (const keys of node.scanStream({ match: `${prefix}*`, count: 500 }) as AsyncIterable<string[]>) {
      for (const key of keys) removed += await node.del(key);
    }
  }
  return removed;
}
