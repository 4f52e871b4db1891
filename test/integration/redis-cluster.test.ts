import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Cluster } from 'ioredis';
import { signIn, startTestApp, type Session, type TestApp } from '../helpers/app.js';
import { makeRoom } from '../helpers/factories.js';
import { callSignal as signal, DeviceClient, spawnHub, type HubProcess } from '../helpers/hubs.js';
import { latestMessageIds, untilAnswered, sendsOf } from '../helpers/phone-posts.js';
import { ownRedisCluster } from '../helpers/private-stack.js';
import { opsReady, spawnApi, spawnRole, type RoleProcess } from '../helpers/processes.js';
import { jobCounts } from '../helpers/queued.js';
import { until } from '../helpers/wait.js';
import { QUEUES } from '../../src/platform/queues.js';
import { closeRedis, connectRedis } from '../../src/platform/redis.js';

/** Retries what a process retries while a failover is under way (a command refused or unanswered). */
async function retried<T>(what: () => Promise<T>, ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      return await what();
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

describe('on a Redis Cluster (three masters with a replica each): three hubs, two api nodes and a worker', () => {
  let cluster: Awaited<ReturnType<typeof ownRedisCluster>>;
  let t: TestApp;
  const apis: (RoleProcess & { url: string })[] = [];
  const hubs: HubProcess[] = [];
  const others: RoleProcess[] = [];
  const clients: DeviceClient[] = [];
  /** The test process's own client of the cluster (the in-process api's state role). */
  const redis = () => t.ctx.platform.redis as Cluster;
  const slotOf = async (key: string) => Number(await redis().call('CLUSTER', 'KEYSLOT', key));
  /** "host:port" of the master serving a slot, as the client sees the cluster now. */
  const masterOf = async (key: string) => redis().slots[await slotOf(key)]![0]!;

  before(async () => {
    cluster = await ownRedisCluster();
    t = await startTestApp({ REDIS_URL: cluster.url });
    const env = { SMS_OUTBOX_FILE: t.config.SMS_OUTBOX_FILE, CODE_HASH_MEMORY_KIB: '4096', CODE_HASH_PASSES: '2', DEPOSIT_MNEMONIC: t.config.DEPOSIT_MNEMONIC };
    apis.push(...(await Promise.all([spawnApi(t.config, env), spawnApi(t.config, env)])));
    hubs.push(...(await Promise.all([spawnHub(t.config), spawnHub(t.config), spawnHub(t.config)])));
    // A job a worker held on the killed master is taken again once its lock lapses: 5 s here (30 s by
    // default), so the failover test waits for it in seconds, as the chaos tests do.
    others.push(await spawnRole('worker', t.config, { ...env, OPS_PORT: '0', WORKER_LOCK_MS: '5000' }, opsReady));
  });
  after(async () => {
    for (const client of clients) client.close();
    await Promise.all([...apis, ...hubs, ...others].map((node) => node.kill('SIGKILL')));
    await t?.close();
    await cluster?.stop();
  });

  it('a client closed while the map of slots is being read again leaves no timer running', async () => {
    const client = connectRedis(cluster.url, { commandTimeoutMs: 2_000 }) as Cluster;
    await client.ping();
    // ioredis's own method, counted for this client: its refreshes after the close.
    const prototype = Object.getPrototypeOf(client) as { refreshSlotsCache: (this: Cluster, callback?: () => void) => void };
    const original = prototype.refreshSlotsCache;
    let refreshes = 0;
    let closed = false;
    let underWay: (() => void) | null = null;
    prototype.refreshSlotsCache = function (this: Cluster, callback?: () => void) {
      if (this === client) {
        refreshes++;
        // The timer's refresh (it passes the callback that arms the next round), held as if still under way at the close.
        if (callback && !closed && !underWay) {
          underWay = () => original.call(this, callback);
          return;
        }
      }
      original.call(this, callback);
    };
    try {
      await until(() => underWay !== null, 'a refresh of the timer', 5_000);
      await closeRedis(client);
      closed = true;
      const atClose = refreshes;
      underWay!();
      // Without the fix, the refresh's callback re-arms the 2-second timer, and each round the next.
      await new Promise((resolve) => setTimeout(resolve, 4_500));
      assert.equal(refreshes, atClose, 'no refresh after the close');
    } finally {
      prototype.refreshSlotsCache = original;
    }
  });

  it('the keys one operation touches share a slot, and the queues spread over every master', async () => {
    const keys = t.ctx.platform.keys;
    const device = 'a-device';
    const deviceSlots = new Set(await Promise.all([keys.inboxMeta(device), keys.inboxEvents(device), keys.presence.deviceNodes(device), keys.presence.seen(device)].map(slotOf)));
    assert.equal(deviceSlots.size, 1, 'a device\'s inbox and presence are in one slot');
    const appSlots = new Set(await Promise.all([keys.apps.breakerOpen('app'), keys.apps.breakerProbe('app'), keys.apps.inflight('app'), keys.apps.breakerFailures('app')].map(slotOf)));
    assert.equal(appSlots.size, 1, 'an app\'s breaker keys are in one slot');
    const queueMasters = new Set(await Promise.all(Object.values(QUEUES).map((definition) => masterOf(`${keys.queuePrefix(definition.queue)}:${definition.queue}:wait`))));
    assert.equal(queueMasters.size, 3, `the queues live on ${queueMasters.size} of the 3 masters`);
  });

  it('a master killed mid-traffic (its replica takes over): no device event or queued job lost, every post reaches every member (live once and in order, or read when the hub says to catch up)', async (context) => {
    const members = await Promise.all([signIn(t), signIn(t), signIn(t), signIn(t)]);
    const [author] = members as [Session, ...Session[]];
    const room = await makeRoom(t, author, { members: members.slice(1) });
    // Three members online, one on each hub; the fourth is offline with a push token (so every post
    // has someone to push: its job is the worker's).
    const token = await fetch(`${apis[0]!.url}/api/devices/push-token`, { method: 'PUT', headers: { authorization: `Bearer ${members[3]!.accessToken}`, 'content-type': 'application/json' }, body: JSON.stringify({ token: `fcm-cluster-${members[3]!.deviceId}`, provider: 'FCM' }) });
    assert.equal(token.status, 204);
    const live = await Promise.all(
      members.slice(0, 3).map(async (member, i) => {
        const client = new DeviceClient(member.accessToken);
        clients.push(client);
        await client.connect(hubs[i]!.port);
        // What the phone shows: the posts that arrived live, in their order, and those it read over REST
        // when its hub told it that room broadcasts had lapsed (as the protocol asks a phone to).
        const posts: string[] = [];
        const caughtUp = new Set<string>();
        let resyncs = 0;
        client.socket!.on('message.new', (payload: { messageId: string }) => posts.push(payload.messageId));
        client.socket!.on('rooms.resync-required', () => {
          resyncs++;
          void latestMessageIds(apis[i % 2]!.url, member, room.id).then((read) => read.forEach((id) => caughtUp.add(id)));
        });
        return { member, client, posts, caughtUp, resyncs: () => resyncs };
      }),
    );
    const pushJobsBefore = await jobCounts(t, QUEUES.messagePush);

    // The master killed is the one holding the author's inbox, in the middle of the traffic.
    const doomed = await masterOf(t.ctx.platform.keys.inboxEvents(author.deviceId));
    const victim = cluster.nodes.find((node) => doomed.endsWith(`:${node.port}`));
    assert.ok(victim, `the master ${doomed} is one of the cluster's nodes`);

    const sends = sendsOf(60, 'cluster');
    const ids: string[] = [];
    let killedAt = 0;
    for (const [i, send] of sends.entries()) {
      if (i === 20) {
        victim.child.kill('SIGKILL');
        killedAt = Date.now();
      }
      // Each post through one api node or the other, retried as a phone retries (the same ids).
      ids.push(await untilAnswered(apis[i % 2]!.url, author, room.id, send));
      // And a device event to each online member, retried as the api retries a refused call.
      await Promise.all(live.map(({ member }) => retried(() => t.ctx.events.toDevice(member.deviceId, 'call.signal', signal(i)))));
    }
    context.diagnostic(`60 posts and 180 device events; the last went out ${Date.now() - killedAt} ms after the master was killed`);

    for (const { member, client, posts, caughtUp, resyncs } of live) {
      const shown = () => new Set([...posts, ...caughtUp]);
      await until(() => ids.every((id) => shown().has(id)), `member ${member.userId}'s phone to show every post (${ids.filter((id) => shown().has(id)).length} of ${ids.length}, told to catch up ${resyncs()} times)`, 30_000);
      context.diagnostic(`member ${live.findIndex((one) => one.member === member)}: ${posts.length} posts live, told to catch up ${resyncs()} times`);
      // Live posts arrive once each, in the order they were posted; the rest were read when the hub said to.
      assert.equal(new Set(posts).size, posts.length, 'a post arrived live twice');
      const order = posts.map((id) => ids.indexOf(id));
      assert.ok(order.every((index, k) => index >= 0 && (k === 0 || index > order[k - 1]!)), `live posts out of order: ${order.join(',')}`);
      if (posts.length < ids.length) assert.ok(resyncs() > 0, 'posts missed live with no word to catch up');
      await client.until((received) => received.length >= sends.length, 30_000);
      assert.deepEqual(
        client.received.map((event) => (event.data as { payload: { i: number } }).payload.i),
        sends.map((_, i) => i),
        'every device event once, in order',
      );
      assert.deepEqual(client.received.map((event) => event.seq), sends.map((_, i) => i + 1), 'with no gap in the sequence');
    }
    // One push job per post for the offline member, each run by the worker.
    await until(async () => (await jobCounts(t, QUEUES.messagePush)).completed - pushJobsBefore.completed >= ids.length, 'every post\'s push job done', 30_000);
    const counts = await jobCounts(t, QUEUES.messagePush);
    assert.equal(counts.completed - pushJobsBefore.completed, ids.length, 'one push job per post');
    assert.equal(counts.failed, pushJobsBefore.failed);
  });
});
