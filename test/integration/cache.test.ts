import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { createContext, type AppContext } from '../../src/composition.js';
import { createLogger } from '../../src/platform/logger.js';
import { bearer, freshPhone, signIn, startTestApp, type Session, type TestApp, apiOf } from '../helpers/app.js';
import { makeRoom } from '../helpers/factories.js';

/** Resolves once `check` holds, polling every 10 ms; rejects after `ms`. */
async function eventually(check: () => Promise<boolean>, ms = 2_000): Promise<number> {
  const started = Date.now();
  while (!(await check())) {
    if (Date.now() - started > ms) throw new Error(`not within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return Date.now() - started;
}

// Two api "nodes" on one database and Redis: what one writes, the other's caches must not hide.
describe('hot-path caches across api nodes', () => {
  let t: TestApp;
  let otherCtx: AppContext;
  let other: FastifyInstance;

  before(async () => {
    t = await startTestApp();
    otherCtx = await createContext(t.config, createLogger(t.config, 'test'));
    other = await apiOf(otherCtx);
  });
  after(async () => {
    await other.close();
    await otherCtx.close();
    await t.close();
  });

  const me = (app: FastifyInstance, s: Session) => app.inject({ url: '/api/users/me', headers: bearer(s.accessToken) });

  it('a device signed out on one node is refused on the other at once', async () => {
    const s = await signIn(t, freshPhone());
    // The other node has the device's check cached now.
    assert.equal((await me(other, s)).statusCode, 200);
    assert.equal((await me(other, s)).statusCode, 200);
    assert.equal((await t.app.inject({ method: 'POST', url: '/api/auth/logout', headers: bearer(s.accessToken) })).statusCode, 204);
    assert.equal((await me(t.app, s)).statusCode, 401, 'the node that signed it out refuses it before answering');
    const ms = await eventually(async () => (await me(other, s)).statusCode === 401);
    assert.ok(ms < 1_000, `the other node took ${ms} ms, not milliseconds`);
  });

  it('a room changed on one node is posted to under the new rules on the other', async () => {
    const owner = await signIn(t, freshPhone());
    const member = await signIn(t, freshPhone());
    const room = await makeRoom(t, owner, { type: 'PUBLIC_GROUP' });
    assert.equal((await t.app.inject({ method: 'POST', url: `/api/rooms/${room.id}/join`, headers: bearer(member.accessToken) })).statusCode, 200);
    const post = () =>
      other.inject({ method: 'PUT', url: `/api/messages/${room.id}`, headers: bearer(member.accessToken), payload: { roomId: room.id, message: 'hello' } });
    assert.equal((await post()).statusCode, 200, 'members may post: the other node caches the room');
    const query = `name=${encodeURIComponent(room.name ?? '')}&description=&commentsEnabled=false&participantPublishEnabled=false`;
    assert.equal((await t.app.inject({ method: 'POST', url: `/api/rooms/${room.id}?${query}`, headers: bearer(owner.accessToken) })).statusCode, 200);
    const ms = await eventually(async () => (await post()).json().code === 'PUBLISH_NOT_ALLOWED');
    assert.ok(ms < 1_000, `the other node took ${ms} ms, not milliseconds`);
  });

  it('a member disabled on one node can no longer post on the other', async () => {
    const owner = await signIn(t, freshPhone());
    const member = await signIn(t, freshPhone());
    const room = await makeRoom(t, owner, { members: [member] });
    const post = () =>
      other.inject({ method: 'PUT', url: `/api/messages/${room.id}`, headers: bearer(member.accessToken), payload: { roomId: room.id, message: 'hi' } });
    assert.equal((await post()).statusCode, 200, 'the other node caches the membership');
    assert.equal((await t.app.inject({ method: 'POST', url: `/api/rooms/${room.id}/members/${member.userId}/enabled?enabled=false`, headers: bearer(owner.accessToken) })).statusCode, 204);
    const ms = await eventually(async () => (await post()).json().code === 'NOT_A_MEMBER');
    assert.ok(ms < 1_000, `the other node took ${ms} ms, not milliseconds`);
    // Removed, then added back: posting works again at once.
    assert.equal((await t.app.inject({ method: 'POST', url: `/api/rooms/${room.id}/members/${member.userId}/enabled?enabled=true`, headers: bearer(owner.accessToken) })).statusCode, 204);
    await eventually(async () => (await post()).statusCode === 200);
  });
});
