import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Cluster } from 'ioredis';
import type { Workers } from '../../workers/main.js';
import { bearer, freshPhone, signIn, startTestApp, startTestWorkers, type Session, type TestApp, recordedPush } from '../helpers/app.js';
import { callSignal as signal, DeviceClient, dropConnections, shardChannels, shardSubscribers, spawnHub, type HubProcess } from '../helpers/hubs.js';
import { until } from '../helpers/wait.js';
import { chatRoom } from '../../src/platform/device-events.js';
import { roomChannel } from '../../src/platform/sharded-emitter.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));


for (const engine of ['uws', 'ws']) describe(`realtime hub across three node processes (${engine})`, () => {
  let t: TestApp;
  let workers: Workers;
  const hubs: HubProcess[] = [];
  const clients: DeviceClient[] = [];
  const client = (session: Session) => {
    const c = new DeviceClient(session.accessToken);
    clients.push(c);
    return c;
  };

  before(async () => {
    t = await startTestApp({ PRESENCE_TTL: '2' });
    workers = await startTestWorkers(t);
    hubs.push(...(await Promise.all([spawnHub(t.config, { SOCKET_ENGINE: engine }), spawnHub(t.config, { SOCKET_ENGINE: engine }), spawnHub(t.config, { SOCKET_ENGINE: engine })])));
  });
  after(async () => {
    for (const c of clients) c.close();
    await Promise.all(hubs.map((hub) => hub.kill('SIGKILL')));
    await workers.close();
    await t.close();
  });

  it('a device event from an api process reaches the right devices on other nodes, and no other', async () => {
    const phone = freshPhone();
    const a = await signIn(t, phone, { name: 'A', platform: 'IOS' });
    const b = await signIn(t, phone, { name: 'B', platform: 'ANDROID' });
    const stranger = await signIn(t);
    const [onA, onB, onStranger] = [client(a), client(b), client(stranger)];
    // B was signed in after A: A already has B's device.added waiting in its inbox.
    await onA.connect(hubs[0]!.port);
    await onB.connect(hubs[1]!.port);
    await onStranger.connect(hubs[2]!.port);
    await onA.until((r) => r.some((e) => e.event === 'device.added' && e.data.deviceId === b.deviceId));

    // A third sign-in, through the REST api (which holds no sockets), tells A and B but nobody else.
    const c = await signIn(t, phone, { name: 'C', platform: 'WEB' });
    await onA.until((r) => r.some((e) => e.data.deviceId === c.deviceId));
    await onB.until((r) => r.some((e) => e.data.deviceId === c.deviceId));

    // A single-device event reaches only that device.
    await t.ctx.events.toDevice(b.deviceId, 'call.signal', signal(7));
    await onB.until((r) => r.some((e) => e.event === 'call.signal'));
    await sleep(300);
    assert.equal(onA.received.filter((e) => e.event === 'call.signal').length, 0);
    assert.equal(onStranger.received.length, 0);
    const bSeqs = onB.received.map((e) => e.seq);
    assert.deepEqual(bSeqs, bSeqs.map((_, i) => i + 1), 'B sees 1, 2, ... in order');
    const added = onA.received.find((e) => e.data.deviceId === c.deviceId)!;
    assert.deepEqual(added.data, { deviceId: c.deviceId, name: 'C', platform: 'WEB' });
    assert.ok(!Number.isNaN(Date.parse(added.at)));
  });

  it('a node killed mid-stream: its clients move on and get every missed event, in order, exactly once', async () => {
    const victim = await spawnHub(t.config, { SOCKET_ENGINE: engine });
    hubs.push(victim);
    const session = await signIn(t);
    const phone = client(session);
    await phone.connect(victim.port);

    const total = 60;
    const emitting = (async () => {
      for (let i = 1; i <= total; i++) {
        await t.ctx.events.toDevice(session.deviceId, 'call.signal', signal(i));
        await sleep(10);
      }
    })();
    await phone.until((r) => r.length >= 10);
    const dropped = phone.disconnected();
    await victim.kill('SIGKILL');
    assert.equal(await dropped, 'transport close');
    // The phone reconnects to another node with the last sequence it processed.
    await phone.connect(hubs[1]!.port);
    await emitting;
    await phone.until((r) => r.length >= total);
    await sleep(300);
    assert.deepEqual(
      phone.received.map((e) => e.seq),
      Array.from({ length: total }, (_, i) => i + 1),
    );
    assert.deepEqual(
      phone.received.map((e) => (e.data.payload as { i: number }).i),
      Array.from({ length: total }, (_, i) => i + 1),
    );
  });

  it('an offline device gets a recorded push, then the event from its inbox on reconnect', async () => {
    const phone = freshPhone();
    const offline = await signIn(t, phone, { name: 'Offline', platform: 'ANDROID' });
    await t.app.inject({
      method: 'PUT',
      url: '/api/devices/push-token',
      headers: bearer(offline.accessToken),
      payload: { token: 'fcm-offline-token-1', provider: 'FCM' },
    });
    const online = await signIn(t, phone, { name: 'Online', platform: 'IOS' });
    await t.app.inject({ method: 'PUT', url: '/api/devices/push-token', headers: bearer(online.accessToken), payload: { token: 'apns-online-token-1', provider: 'APNS' } });
    const onOnline = client(online);
    await onOnline.connect(hubs[0]!.port);

    const newcomer = await signIn(t, phone, { name: 'Newcomer', platform: 'WEB' });
    const pushes = t.db.collection('push_records');
    const record = await recordedPush(t, { token: 'fcm-offline-token-1', 'message.data.deviceId': newcomer.deviceId });
    assert.ok(record, 'the offline device was pushed');
    assert.equal(record.service, 'FCM');
    assert.equal(record.message.kind, 'alert');
    assert.equal(record.message.data.event, 'device.added');
    assert.match(record.message.alert.body, /Newcomer/);
    // The online device got the event over its socket, and no push.
    await onOnline.until((r) => r.some((e) => e.data.deviceId === newcomer.deviceId));
    assert.equal(await pushes.countDocuments({ token: 'apns-online-token-1' }), 0);

    const late = client(offline);
    await late.connect(hubs[2]!.port);
    await late.until((r) => r.some((e) => e.data.deviceId === newcomer.deviceId));
    assert.deepEqual(
      late.received.map((e) => [e.event, e.data.name]),
      [
        ['device.added', 'Online'],
        ['device.added', 'Newcomer'],
      ],
    );
  });

  it('room broadcasts reach every member socket on every node, follow membership changes, and no one else', async () => {
    const [m1, m2, outsider, joiner] = await Promise.all([signIn(t), signIn(t), signIn(t), signIn(t)]);
    const roomId = `room-${Date.now()}`;
    await t.ctx.repos.roomMembers.add(roomId, m1.userId, new Date());
    await t.ctx.repos.roomMembers.add(roomId, m2.userId, new Date());
    const got = new Map<string, unknown[]>();
    const listen = async (session: Session, port: number) => {
      const c = client(session);
      await c.connect(port);
      const seen: unknown[] = [];
      got.set(session.userId, seen);
      c.socket!.on('message.new', (payload: unknown) => seen.push(payload));
      return c;
    };
    await listen(m1, hubs[0]!.port);
    await listen(m2, hubs[1]!.port);
    await listen(outsider, hubs[2]!.port);
    const joinerSocket = await listen(joiner, hubs[2]!.port);

    t.ctx.events.toRoom(roomId, 'message.new', { roomId, messageId: 'm-1', text: 'hello' });
    await until(() => got.get(m1.userId)!.length >= 1 && got.get(m2.userId)!.length >= 1, 'the broadcast on both members\' sockets');
    assert.deepEqual(got.get(m1.userId), [{ roomId, messageId: 'm-1', text: 'hello' }]);
    assert.deepEqual(got.get(m2.userId), [{ roomId, messageId: 'm-1', text: 'hello' }]);
    assert.deepEqual(got.get(outsider.userId), []);

    // A member added while connected joins the broadcast on the node holding the socket.
    await t.ctx.repos.roomMembers.add(roomId, joiner.userId, new Date());
    // The room is new to the joiner's hub: it hears the room's broadcasts once Redis has confirmed its
    // subscription to the room's channel (docs/clients/socket-protocol.md, "Room broadcasts").
    const channel = roomChannel(t.ctx.platform.keys.socketIo, chatRoom(roomId));
    const hubsSubscribed = () => shardSubscribers(t.ctx.platform.pubsub, channel);
    assert.equal(await hubsSubscribed(), 2, 'the hubs of m1 and m2 hear the room');
    t.ctx.events.joinChatRoom(joiner.userId, roomId);
    await until(async () => (await hubsSubscribed()) === 3, 'the joiner\'s hub subscribed to the room');
    // No wait needed for the leave: the emitter publishes it on the room's channel before the broadcast,
    // and m2's hub receives that channel's messages in order (on a cluster as well: one shard).
    t.ctx.events.leaveChatRoom(m2.userId, roomId);
    t.ctx.events.toRoom(roomId, 'message.new', { roomId, messageId: 'm-2' });
    await until(() => got.get(joiner.userId)!.length >= 1 && got.get(m1.userId)!.length >= 2, 'the second broadcast');
    assert.deepEqual(got.get(joiner.userId), [{ roomId, messageId: 'm-2' }]);
    assert.equal(got.get(m2.userId)!.length, 1);
    assert.equal(got.get(m1.userId)!.length, 2);

    // hub.ping echoes its body in the ack.
    const echo = await new Promise((resolve) => joinerSocket.socket!.emit('hub.ping', { n: 42 }, resolve));
    assert.deepEqual(echo, { n: 42 });
  });

  it('acknowledged events are trimmed and not replayed', async () => {
    const session = await signIn(t);
    for (let i = 1; i <= 5; i++) await t.ctx.events.toDevice(session.deviceId, 'call.signal', signal(i));
    const first = client(session);
    await first.connect(hubs[0]!.port);
    await first.until((r) => r.length === 5);
    first.ack(3);
    await until(async () => (await t.ctx.services.inbox.readAfter(session.deviceId, 0)).length === 2, 'the acknowledged events trimmed');
    assert.deepEqual((await t.ctx.services.inbox.readAfter(session.deviceId, 0)).map((e) => e.seq), [4, 5]);
    first.close();
    // A device reconnecting with lastSeq 3 gets 4 and 5 only.
    const again = new DeviceClient(session.accessToken);
    clients.push(again);
    again.lastSeq = 3;
    await again.connect(hubs[1]!.port);
    await again.until((r) => r.length === 2);
    assert.deepEqual(again.received.map((e) => e.seq), [4, 5]);
  });

  it('a poke lost while a hub\'s poke connection was down is made up once it is subscribed again', async () => {
    const [session, control] = [await signIn(t), await signIn(t)];
    const [phone, controlPhone] = [client(session), client(control)];
    await phone.connect(hubs[0]!.port);
    await controlPhone.connect(hubs[0]!.port);
    await t.ctx.events.toDevice(session.deviceId, 'call.signal', signal(1));
    await phone.until((received) => received.length === 1);
    // An event whose poke was lost: stored in the inbox, no hub told.
    await t.ctx.services.inbox.append(session.deviceId, 'call.signal', signal(2));
    // The control: a later poke to another device on the same hub arrives, and the phone still lacks its event.
    await t.ctx.events.toDevice(control.deviceId, 'call.signal', signal(3));
    await controlPhone.until((received) => received.length === 1);
    assert.equal(phone.received.length, 1, 'the stored event reached the phone without a poke');
    // This file's hubs' poke connections (named by its prefix) dropped, as a Redis restart drops them.
    const dropped = await dropConnections(t.ctx.platform.pubsub, `${t.config.REDIS_PREFIX}hub-pokes`);
    assert.ok(dropped >= 3, `the hubs' poke connections: ${dropped}`);
    // Once subscribed again, the hub has every device it holds read its inbox.
    await phone.until((received) => received.length === 2);
    assert.deepEqual(phone.received.map((event) => event.seq), [1, 2]);
    await until(async () => (await shardChannels(t.ctx.platform.pubsub, `${t.config.REDIS_PREFIX}poke:*`)).length >= 3, 'every hub subscribed again');
  });

  it('broadcasts lost while a hub\'s room subscriptions were down: its sockets are told to catch up once they are back', async () => {
    const [member, other] = [await signIn(t), await signIn(t)];
    const roomId = `lapse-${Date.now()}`;
    await t.ctx.repos.roomMembers.add(roomId, member.userId, new Date());
    const onHub = client(member);
    const onOther = client(other);
    await onHub.connect(hubs[1]!.port);
    await onOther.connect(hubs[2]!.port);
    const heard: string[] = [];
    onHub.socket!.on('message.new', (payload: { messageId: string }) => heard.push(payload.messageId));
    // Each socket's notices to catch up, as DeviceClient records them.
    const resyncs = onHub.resyncs;
    t.ctx.events.toRoom(roomId, 'message.new', { roomId, messageId: 'before' });
    await until(() => heard.length === 1, 'the broadcast before the lapse');

    // Whatever was published between the drop and the resubscription reached no socket here.
    const droppedAt = Date.now();
    const dropped = await dropConnections(t.ctx.platform.pubsub, `${t.config.REDIS_PREFIX}hub-rooms`);
    assert.ok(dropped >= 3, `the hubs' room connections: ${dropped}`);
    await until(() => resyncs.length >= 1, 'the socket told to catch up');
    assert.equal(resyncs[0]!.reason, 'BROADCASTS_LAPSED');
    const since = Date.parse(resyncs[0]!.since);
    assert.ok(since >= droppedAt - 5 && since <= Date.now(), `since ${resyncs[0]!.since} is when the connection dropped`);
    // On a cluster a hub has a connection per master, dropped one after another here, and each may be
    // noticed (and made up) apart, as two failovers would be: told once per connection at most.
    const pubsub = t.ctx.platform.pubsub;
    const atMost = pubsub instanceof Cluster ? pubsub.nodes('master').length : 1;
    // Once the room's channel is subscribed again, what is published arrives live.
    const channel = roomChannel(t.ctx.platform.keys.socketIo, chatRoom(roomId));
    await until(async () => (await shardSubscribers(t.ctx.platform.pubsub, channel)) === 1, 'the room subscribed again');
    t.ctx.events.toRoom(roomId, 'message.new', { roomId, messageId: 'after' });
    await until(() => heard.length === 2, 'the broadcast after the lapse');
    assert.deepEqual(heard, ['before', 'after']);
    // Every socket of a hub whose connection dropped is told, whatever its rooms (every hub's dropped here).
    await until(() => onOther.resyncs.length >= 1, 'the socket on another hub told as well');
    assert.ok(resyncs.length <= atMost && onOther.resyncs.length <= atMost, `told ${resyncs.length} and ${onOther.resyncs.length} times, at most ${atMost}`);
    assert.ok(resyncs.every((resync) => Date.parse(resync.since) >= droppedAt - 5), 'every notice is of this lapse');
  });

  it('presence: online while connected, offline within the heartbeat bound after its node dies', async () => {
    const watcher = await signIn(t);
    const watched = await signIn(t);
    await t.ctx.repos.connections.connect(watcher.userId, watched.userId, new Date());
    const node = await spawnHub(t.config, { SOCKET_ENGINE: engine });
    hubs.push(node);
    const presence = async () => {
      const res = await t.app.inject({ url: `/api/presence?userIds=${watched.userId}`, headers: bearer(watcher.accessToken) });
      assert.equal(res.statusCode, 200);
      return res.json()[0] as { online: boolean; lastSeenAt: string | null };
    };
    assert.equal((await presence()).online, false);
    const phone = client(watched);
    await phone.connect(node.port);
    await until(async () => (await presence()).online, 'the watched user online');

    await node.kill('SIGKILL');
    const killedAt = Date.now();
    let offlineAfter = -1;
    while (Date.now() - killedAt < 6_000) {
      if (!(await presence()).online) {
        offlineAfter = Date.now() - killedAt;
        break;
      }
      await sleep(100);
    }
    assert.ok(offlineAfter >= 0, 'still online 6 s after its node died');
    assert.ok(offlineAfter <= 2_000 + 500, `offline after ${offlineAfter} ms, bound is the 2 s heartbeat life`);
    const last = await presence();
    assert.ok(last.lastSeenAt && Date.parse(last.lastSeenAt) <= killedAt);
  });

  it('presence: a clean disconnect is offline at once; strangers are not shown', async () => {
    const watcher = await signIn(t);
    const watched = await signIn(t);
    const stranger = await signIn(t);
    await t.ctx.repos.roomMembers.add('room-p', watcher.userId, new Date());
    await t.ctx.repos.roomMembers.add('room-p', watched.userId, new Date());
    const phone = client(watched);
    await phone.connect(hubs[0]!.port);
    const ask = () => t.app.inject({ url: `/api/presence?userIds=${watched.userId},${stranger.userId}`, headers: bearer(watcher.accessToken) });
    await until(async () => (await ask()).json()[0]?.online === true, 'the watched user online');
    const before = (await ask()).json();
    assert.deepEqual(before.map((p: { userId: string }) => p.userId), [watched.userId]);
    assert.equal(before[0].online, true);
    phone.close();
    await until(async () => (await ask()).json()[0].online === false, 'offline at once after a clean disconnect', 1_500);
    const bad = await t.app.inject({ url: '/api/presence?userIds=', headers: bearer(watcher.accessToken) });
    assert.equal(bad.statusCode, 400);
  });
});

describe('inbox bound', () => {
  let t: TestApp;
  let hub: HubProcess;
  before(async () => {
    t = await startTestApp({ INBOX_MAX_EVENTS: '5' });
    hub = await spawnHub(t.config);
  });
  after(async () => {
    await hub.kill();
    await t.close();
  });

  it('a device that fell past the bound gets one inbox.resync-required, then live events', async () => {
    const session = await signIn(t);
    for (let i = 1; i <= 8; i++) await t.ctx.events.toDevice(session.deviceId, 'call.signal', signal(i));
    const phone = new DeviceClient(session.accessToken);
    phone.lastSeq = 1;
    await phone.connect(hub.port);
    await phone.until((r) => r.length >= 1);
    assert.deepEqual(phone.received[0]!.event, 'inbox.resync-required');
    assert.deepEqual(phone.received[0]!.data, { lastSeq: 1, reason: 'INBOX_BOUND' });
    await t.ctx.events.toDevice(session.deviceId, 'call.signal', signal(9));
    await phone.until((r) => r.some((e) => e.seq === 9));
    // Event 9 came after the resync on the same ordered path: nothing was replayed in between.
    assert.deepEqual(phone.received.map((e) => [e.event, e.seq]), [['inbox.resync-required', 8], ['call.signal', 9]]);
    phone.close();

    // A device within the bound replays normally: lastSeq 6 gets 7, 8, 9.
    const fresh = new DeviceClient(session.accessToken);
    fresh.lastSeq = 6;
    await fresh.connect(hub.port);
    await fresh.until((r) => r.length === 3);
    assert.deepEqual(fresh.received.map((e) => [e.event, e.seq]), [['call.signal', 7], ['call.signal', 8], ['call.signal', 9]]);
    fresh.close();
  });

  it('takes lastSeq as a decimal string (Android sends every auth value as one): replay after it, INBOX_RESET past the end', async () => {
    const session = await signIn(t);
    for (let i = 1; i <= 4; i++) await t.ctx.events.toDevice(session.deviceId, 'call.signal', signal(i));
    const android = new DeviceClient(session.accessToken);
    android.lastSeq = 2;
    await android.connect(hub.port, { lastSeqAsString: true });
    await android.until((r) => r.length >= 2);
    await t.ctx.events.toDevice(session.deviceId, 'call.signal', signal(5));
    await android.until((r) => r.some((e) => e.seq === 5));
    // Positive control first (seq 5 came live), so nothing replayed before 3 can still be on its way.
    assert.deepEqual(android.received.map((e) => [e.event, e.seq]), [['call.signal', 3], ['call.signal', 4], ['call.signal', 5]]);
    android.close();

    // A phone whose lastSeq is past the inbox's end (the inbox was reset): told so, as a number would be.
    const reset = new DeviceClient(session.accessToken);
    reset.lastSeq = 40;
    await reset.connect(hub.port, { lastSeqAsString: true });
    await reset.until((r) => r.length >= 1);
    assert.deepEqual(reset.received.map((e) => [e.event, e.seq]), [['inbox.resync-required', 5]]);
    assert.deepEqual(reset.received[0]!.data, { lastSeq: 40, reason: 'INBOX_RESET' });
    reset.close();
  });
});
