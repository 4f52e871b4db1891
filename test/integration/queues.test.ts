import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Queue } from 'bullmq';
import { startTestApp, type TestApp } from '../helpers/app.js';
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
