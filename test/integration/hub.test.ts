import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { io as connect, type Socket } from 'socket.io-client';
import { startHub, type Hub, type SocketEngine } from '../../realtime/hub.js';
import { createContext, type AppContext } from '../../src/composition.js';
import { createLogger } from '../../src/platform/logger.js';
import { Registry } from 'prom-client';
import { ShardedEmitter } from '../../src/platform/sharded-emitter.js';
import { chatRoom, hasOwnChannel } from '../../src/platform/device-events.js';
import { bearer, signIn, startTestApp, type TestApp } from '../helpers/app.js';
import { makeRoom, postMessage } from '../helpers/factories.js';
import { until } from '../helpers/wait.js';

function open(port: number, auth: Record<string, unknown>): Socket {
  return connect(`http://127.0.0.1:${port}`, { path: '/socket.io/', transports: ['websocket'], auth, reconnection: false, forceNew: true });
}

function connected(socket: Socket): Promise<void> {
  return new Promise((resolve, reject) => {
    socket.once('connect', () => resolve());
    socket.once('connect_error', (error) => reject(error));
  });
}

function refused(socket: Socket): Promise<string> {
  return new Promise((resolve, reject) => {
    socket.once('connect', () => reject(new Error('connected with a bad token')));
    socket.once('connect_error', (error) => resolve(error.message));
  });
}

for (const engine of ['uws', 'ws'] as SocketEngine[]) {
  describe(`socket hub on ${engine}`, () => {
    let t: TestApp;
    const nodes: { ctx: AppContext; hub: Hub; metrics: Registry }[] = [];
    const sockets: Socket[] = [];

    before(async () => {
      t = await startTestApp();
      // Two hub nodes, each a context of its own, sharing the test's database and Redis prefix.
      for (let i = 0; i < 2; i++) {
        const ctx = await createContext(t.config, createLogger(t.config, `hub-${i}`));
        const metrics = new Registry();
        nodes.push({ ctx, metrics, hub: await startHub(ctx.platform, ctx.services, { host: '127.0.0.1', port: 0, engine, metrics }) });
      }
    });
    after(async () => {
      for (const socket of sockets) socket.disconnect();
      for (const { ctx, hub } of nodes) {
        await hub.close();
        await ctx.close();
      }
      await t.close();
    });

    it('accepts a valid access token and joins the device and user rooms', async () => {
      const session = await signIn(t);
      const socket = open(nodes[0]!.hub.port, { token: session.accessToken, lastSeq: 0 });
      sockets.push(socket);
      await connected(socket);
      // The other node sees the socket in both rooms through the Redis adapter.
      const inDevice = await nodes[1]!.hub.io.in(`device:${session.deviceId}`).fetchSockets();
      const inUser = await nodes[1]!.hub.io.in(`user:${session.userId}`).fetchSockets();
      assert.equal(inDevice.length, 1);
      assert.equal(inUser.length, 1);
    });

    it('a room broadcast, encoded once by its sender, reaches the room\'s sockets on both nodes as socket.io events, in order; the adapter\'s own message (a sender built before encoded broadcasts) too', async () => {
      const [owner, member] = [await signIn(t), await signIn(t)];
      const room = await makeRoom(t, owner, { members: [member] });
      const [onA, onB] = [open(nodes[0]!.hub.port, { token: owner.accessToken }), open(nodes[1]!.hub.port, { token: member.accessToken })];
      sockets.push(onA, onB);
      await Promise.all([connected(onA), connected(onB)]);
      const heard = (socket: Socket) => {
        const seen: { messageId: string; message?: string }[] = [];
        socket.on('message.new', (payload: { messageId: string; message?: string }) => seen.push(payload));
        return seen;
      };
      const received = () => Promise.all(nodes.map(async ({ metrics }) => (await metrics.getSingleMetric('hub_room_broadcasts_received_total')!.get()).values[0]?.value ?? 0));
      const before = await received();
      const seenBy = [heard(onA), heard(onB)];
      // Three posts through the API (its emitter encodes them), then one as the adapter's JSON message.
      const posted = [await postMessage(t, owner, room.id, 'one'), await postMessage(t, member, room.id, 'two ✓ "quoted" \\ é'), await postMessage(t, owner, room.id, 'three')];
      const legacy = new ShardedEmitter(t.ctx.platform.pubsub, t.ctx.platform.keys.socketIo, hasOwnChannel, false);
      await legacy.broadcast({ rooms: [chatRoom(room.id)] }, 'message.new', { roomId: room.id, messageId: 'from-an-older-sender' });
      await until(() => seenBy.every((seen) => seen.length >= 4), 'every broadcast on both nodes', 5_000).catch(() => undefined);
      for (const seen of seenBy) {
        assert.deepEqual(seen.map((payload) => payload.messageId), [...posted, 'from-an-older-sender']);
        assert.equal(seen[1]!.message, 'two ✓ "quoted" \\ é', 'the text arrives as it was written');
      }
      // Each node took the four broadcasts itself.
      assert.deepEqual((await received()).map((count, i) => count - before[i]!), [4, 4]);
    });

    it('refuses missing, forged and revoked tokens with UNAUTHORIZED', async () => {
      const session = await signIn(t);
      const port = nodes[1]!.hub.port;
      assert.equal(await refused(open(port, {})), 'UNAUTHORIZED');
      assert.equal(await refused(open(port, { token: `${session.accessToken}x` })), 'UNAUTHORIZED');
      await t.app.inject({ method: 'POST', url: '/api/auth/logout', headers: bearer(session.accessToken) });
      assert.equal(await refused(open(port, { token: session.accessToken })), 'UNAUTHORIZED');
    });

    it('closes a revoked device\'s socket on whatever node holds it', async () => {
      const session = await signIn(t);
      const other = await signIn(t);
      const onA = open(nodes[0]!.hub.port, { token: session.accessToken });
      const onB = open(nodes[1]!.hub.port, { token: other.accessToken });
      sockets.push(onA, onB);
      await Promise.all([connected(onA), connected(onB)]);
      const closed = new Promise<string>((resolve) => onA.once('disconnect', (reason) => resolve(reason)));
      // Revoked through the REST api process, which holds no sockets.
      const started = Date.now();
      const res = await t.app.inject({ method: 'DELETE', url: `/api/devices/${session.deviceId}`, headers: bearer(session.accessToken) });
      assert.equal(res.statusCode, 204);
      assert.equal(await closed, 'io server disconnect');
      assert.ok(Date.now() - started < 3000);
      // Someone else's socket stays up: it still answers a round trip after the revoked one closed.
      assert.deepEqual(await onB.timeout(5_000).emitWithAck('hub.ping', { still: 'up' }), { still: 'up' });
      assert.equal(onB.connected, true);
    });
  });
}

describe('a hub that allows long-polling too (SOCKET_TRANSPORTS=websocket,polling)', () => {
  let t: TestApp;
  let node: { ctx: AppContext; hub: Hub };
  const sockets: Socket[] = [];
  before(async () => {
    t = await startTestApp();
    const ctx = await createContext(t.config, createLogger(t.config, 'hub-polling'));
    node = { ctx, hub: await startHub(ctx.platform, ctx.services, { host: '127.0.0.1', port: 0, engine: 'uws', transports: ['websocket', 'polling'] }) };
  });
  after(async () => {
    for (const socket of sockets) socket.disconnect();
    await node.hub.close();
    await node.ctx.close();
    await t.close();
  });

  it('a room broadcast reaches a long-polling socket and a WebSocket of the room alike (the frame is written to each socket)', async () => {
    const [owner, member] = [await signIn(t), await signIn(t)];
    const room = await makeRoom(t, owner, { members: [member] });
    const url = `http://127.0.0.1:${node.hub.port}`;
    const polling = connect(url, { path: '/socket.io/', transports: ['polling'], upgrade: false, auth: { token: owner.accessToken }, reconnection: false, forceNew: true });
    const webSocket = open(node.hub.port, { token: member.accessToken });
    sockets.push(polling, webSocket);
    await Promise.all([connected(polling), connected(webSocket)]);
    const seenBy = [polling, webSocket].map((socket) => {
      const seen: string[] = [];
      socket.on('message.new', (payload: { messageId: string }) => seen.push(payload.messageId));
      return seen;
    });
    const posted = [await postMessage(t, owner, room.id, 'over polling'), await postMessage(t, member, room.id, 'and WebSocket')];
    await until(() => seenBy.every((seen) => seen.length >= 2), 'both posts on both sockets', 5_000).catch(() => undefined);
    assert.equal(polling.io.engine.transport.name, 'polling');
    for (const seen of seenBy) assert.deepEqual(seen, posted);
  });
});
