import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { countRoundTrips } from '../helpers/round-trips.js';
import type { DeliveryDoc } from '../../src/apps/apps.repo.js';

/** Webhook deliveries recorded at the same moment share their insert; each is recorded once. */
describe('webhook deliveries recorded together', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp();
  });
  after(() => t.close());

  const delivery = (id: string, payload: string): DeliveryDoc => {
    const at = t.clock();
    return { _id: id, appId: 'app-records', event: 'invocation', payload, retry: false, attempts: 0, round: 0, status: 'PENDING', nextAttemptAt: at, createdAt: at, updatedAt: at };
  };

  it('records each once in fewer inserts than deliveries; one recorded again answers the first', async () => {
    const repo = t.ctx.repos.apps;
    const ids = Array.from({ length: 20 }, () => randomUUID());
    const twice = ids[5] as string;
    const { mongo, result } = await countRoundTrips(t.db.client, () =>
      Promise.all([...ids.map((id) => repo.insertDelivery(delivery(id, '{"first":true}'))), repo.insertDelivery(delivery(twice, '{"again":true}'))]),
    );
    const inserts = mongo.filter((command) => command === 'insert app_deliveries').length;
    assert.ok(inserts >= 1 && inserts < ids.length, `${inserts} inserts for ${ids.length + 1} records: ${mongo.join(', ')}`);
    assert.deepEqual(result.slice(0, ids.length).map((doc) => doc._id), ids);
    assert.equal(result.at(-1)?.payload, '{"first":true}', 'recorded again: the delivery as first stored');
    const stored = await t.db.collection<DeliveryDoc>('app_deliveries').find({ _id: { $in: ids } }).toArray();
    assert.equal(stored.length, ids.length);
    assert.ok(stored.every((doc) => doc.payload === '{"first":true}'));
  });
});
