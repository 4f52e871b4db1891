import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Redis } from 'ioredis';
import { io as connect } from 'socket.io-client';
import { startHub, type Hub } from '../../realtime/hub.js';
import { freshPhone, startTestApp, type Session, type TestApp } from '../helpers/app.js';
import { httpAs, makeRoom, makeUser } from '../helpers/factories.js';
import { ownMongo, ownRedis, type OwnServer } from '../helpers/private-stack.js';

const TIMEOUT_MS = 1_500;
const PROBE_MS = 300;
/** The most a request may wait when a dependency stops answering under it: one probe and the bound, with room for a loaded machine. */
const BOUND_MS = PROBE_MS + TIMEOUT_MS + 1_500;

async function until<T>(what: string, fn: () => Promise<T | null | false>, ms = 15_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await fn();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** ioredis's queues of one client: commands sent and unanswered, and commands waiting for a connection. */
function queued(redis: Redis): number {
  const internals = redis as unknown as { commandQueue: { length: number }; offlineQueue: { length: number } };
  return internals.commandQueue.length + internals.offlineQueue.length;
}

/**
 * The service on a MongoDB and a Redis of this file's own, which the tests stop (SIGSTOP) and start
 * again (SIGCONT): every request answers within the bound, with 503 and the code of what is away.
 */
describe('requests while MongoDB or Redis does not answer', () => {
  let mongo: OwnServer;
  let redis: OwnServer;
  let t: TestApp;
  let s: Session;
  let roomId: string;
  let hub: Hub;
  const api = httpAs(() => t);

  before(async () => {
    [mongo, redis] = await Promise.all([ownMongo(), ownRedis()]);
    t = await startTestApp({ MONGODB_URL: mongo.url, REDIS_URL: redis.url, DEPENDENCY_TIMEOUT_MS: String(TIMEOUT_MS), DEPENDENCY_PROBE_MS: String(PROBE_MS) });
    s = await makeUser(t);
    roomId = (await makeRoom(t, s)).id;
    hub = await startHub(t.ctx.platform, t.ctx.services, { host: '127.0.0.1', port: 0, engine: 'ws' });
  });
  after(async () => {
    await hub?.close();
    await t?.close();
    await Promise.all([mongo?.stop(), redis?.stop()]);
  });

  const post = (text: string) => api(s, 'PUT', `/api/messages/${roomId}`, { roomId, message: text });

  async function timed<T>(fn: () => Promise<T>): Promise<{ value: T; ms: number }> {
    const started = performance.now();
    const value = await fn();
    return { value, ms: performance.now() - started };
  }

  it('answers 503 DATABASE_UNAVAILABLE within the bound while MongoDB is stopped, says so in /readyz, and recovers by itself', async () => {
    assert.equal((await post('before')).statusCode, 200);
    mongo.pause();
    try {
      // Sent as the database stops: it waits at most the bound.
      const first = await timed(() => post('while stopped'));
      assert.equal(first.value.statusCode, 503, first.value.body);
      assert.equal(first.value.json().code, 'DATABASE_UNAVAILABLE');
      assert.ok(Number(first.value.headers['retry-after']) >= 1);
      assert.ok(first.ms < BOUND_MS, `the first request waited ${first.ms} ms`);

      // Once it is known to be away, requests are refused at once: reads, writes, sign-in.
      for (const request of [() => api(s, 'GET', `/api/rooms/${roomId}`), () => post('again'), () => t.app.inject({ method: 'POST', url: '/api/auth/code', payload: { phone: freshPhone() } })]) {
        const answer = await timed(request);
        assert.equal(answer.value.statusCode, 503, answer.value.body);
        assert.equal(answer.value.json().code, 'DATABASE_UNAVAILABLE');
        assert.ok(answer.ms < 500, `a request waited ${answer.ms} ms though MongoDB was known to be away`);
      }
      const ready = await t.app.inject({ method: 'GET', url: '/readyz' });
      assert.equal(ready.statusCode, 503);
      assert.deepEqual(ready.json().details, [{ mongodb: 'down', redis: 'ok' }]);
      // Liveness does not depend on the database; the metrics say what is away.
      assert.equal((await t.app.inject({ method: 'GET', url: '/healthz' })).statusCode, 200);
      const metrics = (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
      assert.match(metrics, /dependency_up\{dependency="mongodb"\} 0/);
      assert.match(metrics, /dependency_up\{dependency="redis"\} 1/);
    } finally {
      mongo.resume();
    }
    await until('posting to work again', async () => (await post('after')).statusCode === 200);
    assert.equal((await t.app.inject({ method: 'GET', url: '/readyz' })).statusCode, 200);
    // The messages refused with 503 were not stored.
    const texts = (await t.db.collection('messages').find({ roomId }).toArray()).map((message) => message.message as string);
    assert.ok(!texts.includes('again'), `a refused message was stored: ${texts.join(', ')}`);
  });

  it('answers 503 REDIS_UNAVAILABLE while Redis is stopped, fails sign-in closed, queues no commands, and recovers by itself', async () => {
    // Cast: this test's Redis is one server (REDIS_URL is a redis:// URL), whose client keeps a command queue.
    const client = t.ctx.platform.redis as Redis;
    redis.pause();
    try {
      // The rate limit of sign-in codes lives in Redis: no code is sent while it cannot be checked.
      const code = await timed(() => t.app.inject({ method: 'POST', url: '/api/auth/code', payload: { phone: freshPhone() } }));
      assert.equal(code.value.statusCode, 503, code.value.body);
      assert.equal(code.value.json().code, 'REDIS_UNAVAILABLE');
      assert.ok(code.ms < BOUND_MS, `the code request waited ${code.ms} ms`);

      // Then every request is refused at once, posts too (their events could not reach sockets).
      const refused = await timed(() => post('while redis is stopped'));
      assert.equal(refused.value.statusCode, 503, refused.value.body);
      assert.equal(refused.value.json().code, 'REDIS_UNAVAILABLE');
      assert.ok(refused.ms < 500, `a post waited ${refused.ms} ms though Redis was known to be away`);

      // Two hundred requests while it is away: each refused at once, and no command waits in the client.
      const before = queued(client);
      const answers = await Promise.all(Array.from({ length: 200 }, (_, i) => (i % 2 ? post(`burst ${i}`) : api(s, 'GET', `/api/rooms/${roomId}`))));
      assert.deepEqual([...new Set(answers.map((answer) => `${answer.statusCode} ${answer.json().code}`))], ['503 REDIS_UNAVAILABLE']);
      assert.ok(queued(client) <= before + 1, `commands queued while Redis was away: ${before} then ${queued(client)}`);
      assert.ok(queued(client) < 20, `${queued(client)} commands wait in the client`);

      const ready = await t.app.inject({ method: 'GET', url: '/readyz' });
      assert.deepEqual(ready.json().details, [{ mongodb: 'ok', redis: 'down' }]);

      // A phone connecting now is told what is away and when to try again, not that its token is bad.
      const handshake = await new Promise<Error & { data?: { code: string; retryAfter: number } }>((resolve, reject) => {
        const socket = connect(`http://127.0.0.1:${hub.port}`, { path: '/socket.io/', transports: ['websocket'], auth: { token: s.accessToken }, reconnection: false, forceNew: true });
        socket.once('connect', () => reject(new Error('connected while Redis was away')));
        socket.once('connect_error', (error) => {
          socket.close();
          resolve(error as Error & { data?: { code: string; retryAfter: number } });
        });
      });
      assert.equal(handshake.message, 'REDIS_UNAVAILABLE');
      assert.deepEqual(handshake.data, { code: 'REDIS_UNAVAILABLE', retryAfter: 1 });
    } finally {
      redis.resume();
    }
    await until('posting to work again', async () => (await post('after redis')).statusCode === 200);
    assert.equal((await t.app.inject({ method: 'GET', url: '/readyz' })).statusCode, 200);
  });
});
