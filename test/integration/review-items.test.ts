import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { newMessageId } from '../../src/messages/message-shared.js';
import { addressOf, freshPhone, lastCode, startTestApp, type TestApp } from '../helpers/app.js';
import { connect, httpAs, makeUser } from '../helpers/factories.js';

/** The smaller findings of the outside review (issue 52, items 6 and 7). */
describe('what an attacker could learn or do on the edges', () => {
  let t: TestApp;
  const api = httpAs(() => t);

  before(async () => {
    t = await startTestApp({ MESSAGE_REQUEST_POSTS: '3' });
  });
  after(() => t.close());

  it('an administrator route refuses a member with 401 before it reads the body', async () => {
    const member = await makeUser(t);
    const malformed = await t.app.inject({ method: 'POST', url: '/api/admin/reports/actions', headers: { authorization: `Bearer ${member.accessToken}`, 'content-type': 'application/json' }, payload: '{not json' });
    assert.equal(malformed.statusCode, 401, malformed.body);
    const invalid = await api(member, 'POST', '/api/admin/reports/actions', { nonsense: true });
    assert.equal(invalid.statusCode, 401);
  });

  it('an error answer about a ticket link names the route, never the ticket', async () => {
    const ticket = 'eyJhbGciOiJIUzI1NiJ9.not-a-valid-ticket-at-all.sig';
    const answer = await t.app.inject({ url: `/media/${ticket}` });
    assert.equal(answer.statusCode, 401);
    assert.equal(answer.json().path, '/media/:ticket');
    assert.ok(!answer.body.includes(ticket));
    assert.equal((await t.app.inject({ url: `/exports/${ticket}` })).json().path, '/exports/:ticket');
  });

  it('a wrong sign-in code answers the same whether or not the number has a live code', async () => {
    const withCode = freshPhone();
    assert.equal((await t.app.inject({ method: 'POST', url: '/api/auth/code', payload: { phone: withCode }, remoteAddress: addressOf(withCode) })).statusCode, 204);
    await lastCode(t.outbox, withCode);
    const without = freshPhone();
    const device = { name: 'Probe', platform: 'IOS' };
    const answers = await Promise.all(
      [withCode, without].map((phone) => t.app.inject({ method: 'POST', url: '/api/auth/login', payload: { phone, code: '000001', device }, remoteAddress: addressOf(phone) })),
    );
    const [live, none] = answers.map((answer) => ({ status: answer.statusCode, code: answer.json().code as string, message: answer.json().message as string }));
    assert.deepEqual(live, none);
    assert.equal(live!.code, 'CODE_INVALID');
  });

  it('a stranger\'s message request carries a few messages, then 429 until it is accepted', async () => {
    const [stranger, recipient] = await Promise.all([makeUser(t), makeUser(t)]);
    const chat = await api(stranger, 'POST', '/api/rooms', { type: 'DIRECT', memberIds: [recipient.userId] });
    assert.equal(chat.statusCode, 200, chat.body);
    const roomId = chat.json().id as string;
    const post = (s: typeof stranger, message: string) => api(s, 'PUT', `/api/messages/${roomId}`, { roomId, message });
    const answers = await Promise.all(['one', 'two', 'three', 'four', 'five'].map((text) => post(stranger, text)));
    assert.deepEqual(answers.map((answer) => answer.statusCode).sort(), [200, 200, 200, 429, 429], 'three pass, however fast they come');
    const refused = answers.find((answer) => answer.statusCode === 429)!;
    assert.equal(refused.json().code, 'MESSAGE_REQUEST_LIMIT');
    assert.ok(Number(refused.headers['retry-after']) > 0);
    // The recipient accepts (opens the chat): the limit is gone.
    assert.equal((await api(recipient, 'POST', `/api/rooms/${roomId}/invitation?accept=true`)).statusCode, 200);
    assert.equal((await post(stranger, 'thanks')).statusCode, 200);
  });

  it('a deleted account answers presence as an unknown id, before its background erase has run', async () => {
    const [watcher, friend] = await Promise.all([makeUser(t), makeUser(t)]);
    await connect(t, watcher, friend);
    const ask = async () => (await api(watcher, 'GET', `/api/presence?userIds=${friend.userId},${watcher.userId}`)).json() as { userId: string }[];
    assert.deepEqual((await ask()).map((p) => p.userId).sort(), [friend.userId, watcher.userId].sort());
    // The state right after the deletion, before the erase removed the connection (no worker runs here).
    await t.db.collection('users').updateOne({ _id: friend.userId as never }, { $set: { deletedAt: new Date() } });
    assert.deepEqual((await ask()).map((p) => p.userId), [watcher.userId]);
  });

  it('message ids keep their order and cannot be guessed from a neighbour\'s', () => {
    const now = Date.now();
    const ids = Array.from({ length: 50 }, (_, i) => newMessageId(now + i));
    assert.deepEqual([...ids].sort(), ids, 'ordered by time');
    const same = [newMessageId(now), newMessageId(now)];
    assert.notEqual(same[0]!.slice(12), same[1]!.slice(12));
    const tails = new Set(Array.from({ length: 1000 }, () => newMessageId(now).slice(12)));
    assert.equal(tails.size, 1000, 'six random bytes each');
    assert.match(ids[0]!, /^[0-9a-f]{24}$/);
  });
});
