import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { countRoundTrips } from '../helpers/round-trips.js';
import type { DeliveryDoc } from '../../src/apps/apps.repo.js';

/** Webhook workers claim each attempt once; claims made at the same moment share their database commands. */
describe('webhook delivery claims made together', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp();
  });
  after(() => t.close());

  const delivery = (at: Date): DeliveryDoc => ({ _id: randomUUID(), appId: 'app-claims', event: 'invocation', payload: '{}', retry: false, attempts: 0, round: 0, status: 'PENDING', nextAttemptAt: at, createdAt: at, updatedAt: at });

  it('gives each current attempt to one job, none to a stale or repeated job, in fewer commands than claims', async () => {
    const repo = t.ctx.repos.apps;
    const at = t.clock();
    const docs = Array.from({ length: 20 }, () => delivery(at));
    for (const doc of docs) await repo.insertDelivery(doc);
    const finished = delivery(at);
    await repo.insertDelivery(finished);
    await repo.finishDelivery(finished._id, 'DELIVERED', at);
    const first = docs[0] as DeliveryDoc;
    const jobs = [
      ...docs.map((doc) => ({ id: doc._id, attempt: 0, round: 0 })),
      { id: first._id, attempt: 0, round: 0 }, // the same job twice (a duplicate job)
      { id: first._id, attempt: 3, round: 0 }, // an attempt that is not current
      { id: finished._id, attempt: 0, round: 0 }, // a finished delivery
    ];
    const { mongo, result } = await countRoundTrips(t.db.client, () => Promise.all(jobs.map((job) => repo.claimAttempt(job.id, job.attempt, job.round, at, 60_000))));
    assert.ok(mongo.length < jobs.length, `${mongo.length} commands for ${jobs.length} claims: ${mongo.join(', ')}`);
    const claimed = result.filter((doc): doc is DeliveryDoc => doc !== null);
    assert.deepEqual(claimed.map((doc) => doc._id).sort(), docs.map((doc) => doc._id).sort(), 'each pending delivery claimed once');
    assert.ok(claimed.every((doc) => doc.attempts === 1 && doc.claimedUntil?.getTime() === at.getTime() + 60_000));
    assert.deepEqual(result.slice(docs.length).filter((doc) => doc !== null && doc._id !== first._id), []);
    assert.equal(result.filter((doc) => doc?._id === first._id).length, 1, 'the delivery taken twice is given to one job');
    const stored = await t.db.collection<DeliveryDoc>('app_deliveries').find({ _id: { $in: docs.map((doc) => doc._id) } }).toArray();
    assert.ok(stored.every((doc) => doc.attempts === 1), 'each attempt counted once');
    // Alone, a claim is one findAndModify.
    const again = await countRoundTrips(t.db.client, () => repo.claimAttempt(first._id, 1, 0, at, 60_000));
    assert.deepEqual(again.mongo, ['findAndModify app_deliveries']);
    assert.equal(again.result?.attempts, 2);
  });
});
