import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import type { Workers } from '../../workers/main.js';
import { bearer, recordedPush, startTestApp, startTestWorkers, type TestApp } from '../helpers/app.js';
import { DeviceClient, spawnHub, type HubProcess } from '../helpers/hubs.js';
import { multipart } from '../helpers/multipart.js';
import { makeRoom, makeUser } from '../helpers/factories.js';
import { ownMongo, ownRedis, type OwnServer } from '../helpers/private-stack.js';
import { spawnApi, spawnRole, type RoleProcess } from '../helpers/processes.js';
import { startAppServer, type AppServer } from '../helpers/app-server.js';
import { walletWith } from '../helpers/wallets.js';
import { jobCounts } from '../helpers/queued.js';
import { until } from '../helpers/wait.js';
import { post, sendsOf, untilAnswered, type Answer, type Send } from '../helpers/phone-posts.js';
import { QUEUES } from '../../src/platform/queues.js';

const exec = promisify(execFile);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The room's messages by their author, checked to be exactly the sends, each once, with the ids the phone was given. */
async function assertExactlyOnce(t: TestApp, roomId: string, sends: Send[], ids: Map<string, string>) {
  const stored = await t.db.collection('messages').find({ roomId }).toArray();
  const byText = new Map<string, number>();
  for (const message of stored) byText.set(message.message as string, (byText.get(message.message as string) ?? 0) + 1);
  for (const send of sends) assert.equal(byText.get(send.text), 1, `${send.text} is stored ${byText.get(send.text) ?? 0} times`);
  assert.equal(stored.length, sends.length);
  for (const send of sends) {
    const message = stored.find((doc) => doc.message === send.text)!;
    assert.equal(ids.get(send.key), message._id, `${send.text}: the phone was told another id than the stored one`);
  }
}

describe('chaos: an api process killed (SIGKILL) while posts are in flight', () => {
  let t: TestApp;
  const apis: RoleProcess[] = [];
  const env = { IDEMPOTENCY_LEASE_SECONDS: '2' };

  before(async () => {
    t = await startTestApp(env);
  });
  after(async () => {
    await Promise.all(apis.map((api) => api.kill('SIGKILL')));
    await t.close();
  });

  it('loses nothing and doubles nothing once the phones retry with their keys on another node', async (context) => {
    const [doomed, survivor] = await Promise.all([spawnApi(t.config, env), spawnApi(t.config, env)]);
    apis.push(doomed, survivor);
    const phones = await Promise.all(Array.from({ length: 4 }, () => makeUser(t)));
    const room = await makeRoom(t, phones[0]!, { members: phones.slice(1) });
    const sends = sendsOf(120, 'post');
    const ids = new Map<string, string>();
    let answered = 0;

    // Four phones post through the node that will die, one message at a time each; it is killed mid-stream.
    const firstTries = phones.map(async (phone, p) => {
      for (const send of sends.filter((_, i) => i % phones.length === p)) {
        const answer = await post(doomed.url, phone, room.id, send);
        if (answer?.status === 200) {
          ids.set(send.key, answer.body as string);
          answered++;
        }
      }
    });
    while (answered < 30) await sleep(5);
    await doomed.kill('SIGKILL');
    await Promise.all(firstTries);
    assert.ok(answered < sends.length, 'every post was answered before the kill');

    // Each phone sends again what it has no answer for (and, as a lost answer looks the same, a few it has) to the other node.
    await Promise.all(
      phones.map(async (phone, p) => {
        const mine = sends.filter((_, i) => i % phones.length === p);
        for (const send of mine.filter((s, i) => !ids.has(s.key) || i % 10 === 0)) {
          const id = await untilAnswered(survivor.url, phone, room.id, send);
          if (ids.has(send.key)) assert.equal(id, ids.get(send.key), 'a replay answered another id');
          ids.set(send.key, id);
        }
      }),
    );
    await assertExactlyOnce(t, room.id, sends, ids);
    context.diagnostic(`${answered} of ${sends.length} answered before the kill`);
  });
});

describe('chaos: the database paused (SIGSTOP) and resumed mid-load', () => {
  let mongo: OwnServer;
  let t: TestApp;
  let api: RoleProcess & { url: string };
  const env = { IDEMPOTENCY_LEASE_SECONDS: '2', DEPENDENCY_TIMEOUT_MS: '1500', DEPENDENCY_PROBE_MS: '300' };

  before(async () => {
    mongo = await ownMongo();
    t = await startTestApp({ ...env, MONGODB_URL: mongo.url });
    api = await spawnApi(t.config, env);
  });
  after(async () => {
    await api?.kill('SIGKILL');
    await t?.close();
    await mongo?.stop();
  });

  it('answers 503 within the bound while it is paused, and the retried posts are stored once each', async (context) => {
    const phones = await Promise.all(Array.from({ length: 3 }, () => makeUser(t)));
    const room = await makeRoom(t, phones[0]!, { members: phones.slice(1) });
    const sends = sendsOf(90, 'paused');
    const ids = new Map<string, string>();
    const statuses = new Map<number, number>();
    let slowest = 0;
    let answered = 0;

    const observe = (answer: Answer, ms: number) => {
      slowest = Math.max(slowest, ms);
      statuses.set(answer?.status ?? 0, (statuses.get(answer?.status ?? 0) ?? 0) + 1);
      assert.ok(answer === null || [200, 409, 503].includes(answer.status), `answered ${JSON.stringify(answer)}`);
    };
    const load = phones.map(async (phone, p) => {
      for (const send of sends.filter((_, i) => i % phones.length === p)) {
        ids.set(send.key, await untilAnswered(api.url, phone, room.id, send, observe));
        answered++;
      }
    });
    while (answered < 20) await sleep(5);
    mongo.pause();
    // Paused until requests have met it (a 503 answered), and a while more so retries meet it too.
    await until(() => (statuses.get(503) ?? 0) > 0, 'a request to meet the paused database', 15_000);
    await sleep(1_000);
    mongo.resume();
    await Promise.all(load);

    assert.ok((statuses.get(503) ?? 0) > 0, `no request met the pause: ${JSON.stringify([...statuses])}`);
    assert.equal(statuses.get(500), undefined, 'a 500 while the database was paused');
    assert.ok(slowest < 1_500 + 300 + 2_000, `a request waited ${Math.round(slowest)} ms`);
    await assertExactlyOnce(t, room.id, sends, ids);
    context.diagnostic(`answers by status ${JSON.stringify(Object.fromEntries(statuses))}; slowest ${Math.round(slowest)} ms`);
  });
});

describe('chaos: a worker killed (SIGKILL) in the middle of a media job', () => {
  let t: TestApp;
  const workers: RoleProcess[] = [];
  const env = { WORKER_LOCK_MS: '1500' };

  before(async () => {
    t = await startTestApp(env);
  });
  after(async () => {
    await Promise.all(workers.map((worker) => worker.kill('SIGKILL')));
    await t.close();
  });

  const spawnWorker = async () => {
    const worker = await spawnRole('worker', t.config, { ...env, STORAGE_DIR: t.config.STORAGE_DIR }, (output) => output.includes('"msg":"workers running"'));
    workers.push(worker);
    return worker;
  };

  it('another worker finishes it from the queue (one MP4, one poster, one READY), and pushes queued meanwhile go out once', async () => {
    const owner = await makeUser(t);
    const room = await makeRoom(t, owner);
    const source = path.join(os.tmpdir(), `chaos-${randomUUID()}.avi`);
    // Long enough that converting it takes seconds on this machine.
    await exec('ffmpeg', ['-nostdin', '-y', '-f', 'lavfi', '-i', 'testsrc=duration=20:size=640x480:rate=25', '-c:v', 'mpeg4', '-q:v', '5', source]);
    const first = await spawnWorker();

    const body = multipart([{ filename: 'clip.avi', content: await readFile(source), contentType: 'video/x-msvideo' }]);
    const res = await t.app.inject({ method: 'POST', url: `/api/messages/${room.id}/attachments`, headers: { ...bearer(owner.accessToken), ...body.headers }, payload: body.payload });
    assert.equal(res.statusCode, 204, res.body);
    const attachment = (await t.db.collection('attachments').findOne({ roomId: room.id }))!;
    const progress = async () => (await t.ctx.services.inbox.readAfter(owner.deviceId, 0)).filter((entry) => entry.event === 'attachment.progress').map((entry) => (entry.data as { state: string; percent: number }));

    // Killed once it has begun converting (its first progress event), long before it ends.
    const deadline = Date.now() + 20_000;
    while (!(await progress()).some((p) => p.percent === 0) && Date.now() < deadline) await sleep(20);
    await first.kill('SIGKILL');
    assert.equal((await t.db.collection('attachments').findOne({ _id: attachment._id }))!.status, 'PROCESSING');

    // While no worker runs, a device event for an offline phone queues its push.
    const offline = await makeUser(t);
    await t.app.inject({ method: 'PUT', url: '/api/devices/push-token', headers: bearer(offline.accessToken), payload: { token: `fcm-chaos-${offline.deviceId}`, provider: 'FCM' } });
    await t.ctx.events.toDevice(offline.deviceId, 'contact.request', { requestId: 'chaos-1', sender: { id: owner.userId, deleted: false, displayName: null, avatarUrl: null, avatarThumbnailUrl: null }, customMessage: 'hello' });

    await spawnWorker();
    const done = Date.now() + 60_000;
    while ((await t.db.collection('attachments').findOne({ _id: attachment._id }))!.status === 'PROCESSING' && Date.now() < done) await sleep(100);
    const finished = (await t.db.collection('attachments').findOne({ _id: attachment._id }))!;
    assert.equal(finished.status, 'READY');
    assert.deepEqual((await readdir(path.join(t.config.STORAGE_DIR, path.posix.dirname(attachment.storageKey as string)))).sort(), [path.basename(attachment.storageKey as string), 'poster.webp', 'video.mp4'].sort());
    assert.equal((await progress()).filter((p) => p.state === 'READY').length, 1, 'READY was told more than once');

    assert.ok(await recordedPush(t, { token: `fcm-chaos-${offline.deviceId}` }), 'the queued push never went out');
    await sleep(500);
    assert.equal(await t.db.collection('push_records').countDocuments({ token: `fcm-chaos-${offline.deviceId}` }), 1);
    await rm(source, { force: true });
  });
});

describe('chaos: Redis restarted mid-load', () => {
  let redis: Awaited<ReturnType<typeof ownRedis>>;
  let t: TestApp;
  let hub: HubProcess;
  let api: RoleProcess & { url: string };
  let workers: Workers;
  let listener: DeviceClient | null = null;
  /** Ends the phone's reconnecting loop, also when the test fails (it would otherwise retry a stopped hub for ever). */
  let stopping = false;
  // A job a worker held when Redis went away is taken again once its lock lapses: 3 s here (30 s by default).
  const env = { DEPENDENCY_TIMEOUT_MS: '1500', DEPENDENCY_PROBE_MS: '300', IDEMPOTENCY_LEASE_SECONDS: '2', WORKER_LOCK_MS: '3000' };

  before(async () => {
    redis = await ownRedis({ persistent: true });
    t = await startTestApp({ ...env, REDIS_URL: redis.url });
    workers = await startTestWorkers(t);
    [hub, api] = await Promise.all([spawnHub(t.config, env), spawnApi(t.config, env)]);
  });
  after(async () => {
    stopping = true;
    listener?.close();
    await Promise.all([hub?.kill('SIGKILL'), api?.kill('SIGKILL')]);
    await workers?.close();
    await t?.close();
    await redis?.stop();
  });

  it('sockets get every device event once, posts are stored once, and queued pushes go out once, after it is back', async (context) => {
    const [poster, phone] = await Promise.all([makeUser(t), makeUser(t)]);
    const room = await makeRoom(t, poster, { members: [phone] });
    const offline = await makeUser(t);
    await t.app.inject({ method: 'PUT', url: '/api/devices/push-token', headers: bearer(offline.accessToken), payload: { token: `fcm-restart-${offline.deviceId}`, provider: 'FCM' } });

    // The phone keeps its socket as an app does: on a disconnect it connects again with its lastSeq.
    listener = new DeviceClient(phone.accessToken);
    await listener.connect(hub.port);
    let reconnects = 0;
    const keepConnected = async () => {
      while (!stopping) {
        await listener!.disconnected();
        if (stopping) return;
        for (;;) {
          try {
            await listener!.connect(hub.port);
            reconnects++;
            void keepConnected();
            return;
          } catch {
            if (stopping) return;
            await sleep(300);
          }
        }
      }
    };
    void keepConnected();

    // Load: posts with their keys, and device events to the phone, each retried until the service takes it.
    const sends = sendsOf(60, 'restart');
    const ids = new Map<string, string>();
    let events = 0;
    const posting = (async () => {
      for (const send of sends) ids.set(send.key, await untilAnswered(api.url, poster, room.id, send));
    })();
    const signalling = (async () => {
      for (let i = 0; i < 60; i++) {
        for (;;) {
          try {
            await t.ctx.events.toDevice(phone.deviceId, 'call.signal', { callId: 'restart', fromDeviceId: 'peer', kind: 'candidate', payload: { i } });
            events++;
            break;
          } catch {
            await sleep(200);
          }
        }
        await sleep(30);
      }
    })();

    while (events < 15) await sleep(10);
    // A push queued just before the restart, for a phone that is offline.
    await t.ctx.events.toDevice(offline.deviceId, 'contact.request', { requestId: 'restart-1', sender: { id: poster.userId, deleted: false, displayName: null, avatarUrl: null, avatarThumbnailUrl: null }, customMessage: 'hi' });
    await redis.shutdown();
    await sleep(1_000);
    redis = await ownRedis({ persistent: true, port: redis.port, dir: redis.dir });
    await Promise.all([posting, signalling]);

    // Every event the inbox holds reached the phone once, in order (live or replayed after a reconnect).
    const last = (await t.ctx.services.inbox.state(phone.deviceId)).seq;
    assert.ok(last >= 60, `the inbox holds ${last} events`);
    await listener.until((received) => received.at(-1)?.seq === last, 15_000);
    stopping = true;
    const seqs = listener.received.map((r) => r.seq);
    assert.deepEqual(seqs, Array.from({ length: last }, (_, i) => i + 1), 'an event was lost, repeated or out of order');
    const indices = listener.received.map((r) => (r.data.payload as { i: number }).i);
    assert.deepEqual([...new Set(indices)].sort((a, b) => a - b), Array.from({ length: 60 }, (_, i) => i));

    await assertExactlyOnce(t, room.id, sends, ids);
    assert.ok(await recordedPush(t, { token: `fcm-restart-${offline.deviceId}` }, 30_000), 'the queued push never went out');
    assert.equal(await t.db.collection('push_records').countDocuments({ token: `fcm-restart-${offline.deviceId}` }), 1);
    // Room broadcasts sent while Redis was away reached nobody: a phone whose socket stayed was told to catch up.
    assert.ok(reconnects > 0 || listener.resyncs.length > 0, 'the socket stayed through the restart and was never told to catch up');
    context.diagnostic(`${reconnects} socket reconnects; ${listener.resyncs.length} words to catch up; ${last} inbox events for 60 signals`);
  });
});

describe('chaos: payment events when a worker or an api is killed (SIGKILL)', () => {
  let t: TestApp;
  const workers: RoleProcess[] = [];
  let app: AppServer | undefined;
  let release: () => void = () => undefined;
  const env = { WORKER_LOCK_MS: '1500', WEBHOOK_ALLOW_PRIVATE: 'true' };

  before(async () => {
    t = await startTestApp(env);
  });
  after(async () => {
    release();
    await Promise.all(workers.map((worker) => worker.kill('SIGKILL')));
    await app?.close();
    await t.close();
  });

  const spawnWorker = async () => {
    const worker = await spawnRole('worker', t.config, env, (output) => output.includes('"msg":"workers running"'));
    workers.push(worker);
    return worker;
  };

  it('the app gets the event, with the same delivery id, from another worker (issue 24, item 2)', async () => {
    // The app holds the first call open (the worker is killed while it waits), and answers the rest.
    const held = new Promise<void>((resolve) => (release = resolve));
    app = await startAppServer(async (call, res) => {
      if (app!.calls.indexOf(call) === 0) await held;
      res.writeHead(204).end();
    });
    const owner = await makeUser(t);
    const created = (await t.app.inject({ method: 'POST', url: '/api/apps', headers: bearer(owner.accessToken), payload: { name: 'Chaos shop', webhookUrl: app.url } })).json() as { id: string };
    const first = await spawnWorker();
    const event = { type: 'payment.completed', id: 'evt-chaos', ts: 1, app: { id: created.id }, payment: { id: 'pay-chaos', status: 'completed' }, user: { id: 'u' } };
    const deliveryId = await t.ctx.services.appWebhooks.enqueue(created.id, 'payment.completed', event, { retry: true });
    const inFlight = Date.now() + 20_000;
    while (app.calls.length === 0 && Date.now() < inFlight) await sleep(20);
    assert.equal(app.calls.length, 1, 'the first worker called the app');
    await first.kill('SIGKILL');
    release();

    // A second worker: BullMQ hands it the dead worker's job, which finds the attempt held (stale).
    // The payments sweep (every 15 s) arms the delivery again once the dead worker's claim lapses:
    // here the sweep runs with the clock past the claim (150 s) and the overdue mark (60 s).
    await spawnWorker();
    // BullMQ finds the dead worker's job stalled (WORKER_LOCK_MS) and hands it on; the second worker
    // finds the attempt held by the dead one and ends the job without calling the app.
    await until(async () => {
      const counts = await jobCounts(t, QUEUES.webhooks);
      return counts.active === 0 && counts.waiting === 0 && counts.completed + counts.failed >= 1;
    }, 'the dead worker\'s job handed to the second worker and ended', 15_000);
    t.clock.advance(215_000);
    try {
      assert.ok((await t.ctx.services.appPayments.sweep()).deliveriesRearmed >= 1);
    } finally {
      t.clock.advance(-215_000);
    }
    const delivered = Date.now() + 20_000;
    while ((await t.db.collection('app_deliveries').findOne({ _id: deliveryId as never }))?.status !== 'DELIVERED' && Date.now() < delivered) await sleep(50);
    assert.equal((await t.db.collection('app_deliveries').findOne({ _id: deliveryId as never }))?.status, 'DELIVERED');
    assert.deepEqual(app.calls.map((call) => call.headers['x-service-delivery']), [deliveryId, deliveryId], 'the same delivery id, at least once more');
  });

  it('an api killed (SIGKILL) between a payment\'s change and its event: the sweep sends the event, once, under the payment\'s delivery id (issue 24, item 2)', async () => {
    const callsBefore = app!.calls.length;
    const [owner, member] = await Promise.all([makeUser(t), makeUser(t)]);
    const created = (await t.app.inject({ method: 'POST', url: '/api/apps', headers: bearer(owner.accessToken), payload: { name: 'Crash shop', webhookUrl: app!.url } })).json() as { id: string };
    const walletId = await walletWith(t, member, 'USDT', 10_000_000n);
    const payments = t.ctx.services.appPayments;
    const open = async (reference: string) => {
      const opening = await payments.open({ appId: created.id, userId: member.userId, appUserId: `au-${reference}`, invocationId: `inv-${reference}`, test: false, payment: { amount: '2', currency: 'USDT', reference, description: 'Crash test', expiresIn: 600 } });
      assert.ok('opened' in opening, 'the payment opened');
      return opening.opened;
    };
    const paid = await open('crash-1');
    const declined = await open('crash-2');

    // An api process that dies right after a payment changes, before the event's delivery is recorded.
    const crashAtChange = async (url: string, body?: object) => {
      const api = await spawnApi(t.config, { CRASH_AT: 'app-payment.changed', ...env });
      const answer = await fetch(`${api.url}${url}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${member.accessToken}`, ...(body ? { 'content-type': 'application/json' } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      }).then((res) => res.status, () => 'no answer');
      await api.kill();
      assert.equal(answer, 'no answer', 'the request died with the process');
      assert.equal(api.child.signalCode, 'SIGKILL');
    };
    await crashAtChange(`/api/app-payments/${paid._id}/confirm`, { walletId });
    await crashAtChange(`/api/app-payments/${declined._id}/decline`);

    const stored = await t.db.collection('app_payments').find({ _id: { $in: [paid._id, declined._id] as never[] } }).sort({ reference: 1 }).toArray();
    assert.deepEqual(stored.map((doc) => [doc.status, doc.eventDue]), [['COMPLETED', 'payment.completed'], ['DECLINED', 'payment.declined']], 'changed, each owing its event');
    assert.equal(await t.db.collection('app_deliveries').countDocuments({ _id: { $in: [`${paid._id}-completed`, `${declined._id}-declined`] as never[] } }), 0, 'no delivery recorded');
    assert.equal((await t.app.inject({ method: 'GET', url: `/api/wallets/${walletId}`, headers: bearer(member.accessToken) })).json().available, '8', 'paid once');

    // The payments sweep records what is owed once the grace has passed; a worker sends it.
    t.clock.advance(31_000);
    try {
      assert.equal((await payments.sweep()).eventsRecorded, 2);
      assert.equal((await payments.sweep()).eventsRecorded, 0, 'recorded once');
    } finally {
      t.clock.advance(-31_000);
    }
    const events = () => app!.calls.slice(callsBefore).map((call) => [call.headers['x-service-delivery'], (JSON.parse(call.raw.toString()) as { type: string }).type]);
    const deadline = Date.now() + 20_000;
    while (events().length < 2 && Date.now() < deadline) await sleep(50);
    assert.deepEqual(events().sort(), [[`${paid._id}-completed`, 'payment.completed'], [`${declined._id}-declined`, 'payment.declined']].sort());
  });
});
