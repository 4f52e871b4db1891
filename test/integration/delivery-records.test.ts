import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { countRoundTrips } from '../helpers/round-trips.js';
import type { DeliveryDoc } from '../../src/apps/apps.repo.js';
import { openSecret } from '../../src/apps/console/secrets.js';
import { must } from '../../src/platform/must.js';
import { QUEUES } from '../../src/platform/queues.js';
import { startAppServer, type AppServer } from '../helpers/app-server.js';
import { httpAs, makeUser } from '../helpers/factories.js';
import { queuedJobs } from '../helpers/queued.js';

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
    assert.deepEqual(result.slice(0, ids.length).map(({ delivery }) => delivery._id), ids);
    assert.ok(result.slice(0, ids.length).every(({ recorded }) => recorded));
    assert.deepEqual([result.at(-1)?.delivery.payload, result.at(-1)?.recorded], ['{"first":true}', false], 'recorded again: the delivery as first stored, not recorded by this call');
    const stored = await t.db.collection<DeliveryDoc>('app_deliveries').find({ _id: { $in: ids } }).toArray();
    assert.equal(stored.length, ids.length);
    assert.ok(stored.every((doc) => doc.payload === '{"first":true}'));
  });
});

/**
 * A delivery is recorded with its first attempt held for the job queued with it, which carries the
 * body sealed: the worker makes that attempt without reading the record. A job that runs late, or that
 * the queue hands out again, goes through the record as every other attempt does.
 */
describe('a webhook delivery\'s first attempt, from its job', () => {
  let t: TestApp;
  let app: AppServer;
  before(async () => {
    t = await startTestApp({ WEBHOOK_ALLOW_PRIVATE: 'true' });
    app = await startAppServer((_call, res) => {
      res.writeHead(204).end();
    });
  });
  after(async () => {
    await app.close();
    await t.close();
  });

  const deliveries = () => t.db.collection<DeliveryDoc>('app_deliveries');
  const event = (amount: string) => ({ type: 'payment.completed', id: randomUUID(), payment: { id: randomUUID(), status: 'completed', amount, currency: 'USDT' } });
  async function enqueued(amount = '7.25') {
    const owner = await makeUser(t);
    const created = (await httpAs(() => t)(owner, 'POST', '/api/apps', { name: 'Till', webhookUrl: app.url })).json() as { id: string };
    const deliveryId = await t.ctx.services.appWebhooks.enqueue(created.id, 'payment.completed', event(amount), { retry: true });
    const [job] = await queuedJobs(t, QUEUES.webhooks, [`${deliveryId}-0-0`]);
    return { appId: created.id, deliveryId, job: must(job, 'the queued job').data };
  }

  it('records the delivery with its first attempt held, and queues the body sealed: no amount in Redis', async () => {
    const { deliveryId, job } = await enqueued('7.25');
    const stored = must(await deliveries().findOne({ _id: deliveryId }), 'the record');
    assert.deepEqual([stored.status, stored.attempts, stored.round], ['PENDING', 1, 0]);
    assert.ok(stored.claimedUntil && stored.claimedUntil.getTime() > t.clock().getTime(), 'held for its job');
    assert.ok(job.first && !JSON.stringify(job).includes('7.25'), JSON.stringify(job));
    assert.equal(JSON.parse(openSecret(Buffer.from(t.ctx.platform.config.APPS_SECRET_KEY, 'base64'), job.first.sealed)).payment.amount, '7.25');
  });

  it('makes the first attempt from the job alone: the activity row and the end are all it writes', async () => {
    const { deliveryId, job } = await enqueued();
    const calls = app.calls.length;
    const { mongo, result } = await countRoundTrips(t.db.client, () => t.ctx.services.appWebhooks.deliver(job));
    assert.equal(result.status, 'DELIVERED');
    // Of the delivery (the app is new here: its first read and its first use are its own).
    assert.deepEqual(mongo.filter((command) => !command.endsWith(' apps')), ['insert app_activity', 'update app_deliveries']);
    assert.equal(app.calls.length, calls + 1);
    assert.equal(app.calls.at(-1)?.headers['x-service-delivery'], deliveryId);
    assert.equal((await deliveries().findOne({ _id: deliveryId }))?.status, 'DELIVERED');
  });

  it('a job handed out again after its worker was lost finds the attempt held and calls nothing', async () => {
    const { deliveryId, job } = await enqueued();
    const calls = app.calls.length;
    assert.equal((await t.ctx.services.appWebhooks.deliver(job, { ranBefore: true })).status, 'STALE');
    assert.equal(app.calls.length, calls);
    assert.equal((await deliveries().findOne({ _id: deliveryId }))?.status, 'PENDING', 'the sweep arms it again once the hold lapses');
  });

  it('a first job that runs late holds the attempt again first, and is stale once the sweep armed the delivery again', async () => {
    const webhooks = t.ctx.services.appWebhooks;
    const late = await enqueued();
    t.clock.advance(15_000);
    try {
      assert.equal((await webhooks.deliver(late.job)).status, 'DELIVERED', 'late, the hold is renewed and the attempt made');
    } finally {
      t.clock.advance(-15_000);
    }
    const rearmed = await enqueued();
    const calls = app.calls.length;
    t.clock.advance(215_000);
    try {
      assert.ok((await webhooks.sweepOverdue()) >= 1, 'its hold lapsed: armed again under a new round');
      assert.equal((await webhooks.deliver(rearmed.job)).status, 'STALE');
      assert.equal(app.calls.length, calls, 'the stale job called nothing');
    } finally {
      t.clock.advance(-215_000);
    }
    assert.deepEqual(await deliveries().findOne({ _id: rearmed.deliveryId }, { projection: { _id: 0, round: 1, attempts: 1, status: 1 } }), { round: 1, attempts: 0, status: 'PENDING' });
  });

  it('a delivery recorded again while its attempt is held queues no second job', async () => {
    const owner = await makeUser(t);
    const created = (await httpAs(() => t)(owner, 'POST', '/api/apps', { name: 'Twice', webhookUrl: app.url })).json() as { id: string };
    const deliveryId = randomUUID();
    const webhooks = t.ctx.services.appWebhooks;
    await webhooks.enqueue(created.id, 'payment.completed', event('1'), { retry: true, deliveryId });
    assert.equal(await webhooks.enqueue(created.id, 'payment.completed', event('1'), { retry: true, deliveryId }), deliveryId);
    assert.deepEqual((await queuedJobs(t, QUEUES.webhooks, [`${deliveryId}-0-0`, `${deliveryId}-1-0`])).map((job) => job !== null), [true, false]);
  });
});
