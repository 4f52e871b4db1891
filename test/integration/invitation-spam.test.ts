import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Workers } from '../../workers/main.js';
import { startTestApp, startTestWorkers, type Session, type TestApp } from '../helpers/app.js';
import { httpAs, makeUser } from '../helpers/factories.js';
import { jobCounts } from '../helpers/queued.js';
import { until } from '../helpers/wait.js';
import { QUEUES } from '../../src/platform/queues.js';

describe('invitation spam (issue 46, item 5)', () => {
  let t: TestApp;
  let workers: Workers;
  const api = httpAs(() => t);

  before(async () => {
    t = await startTestApp({ ROOM_INVITATIONS_WAITING: '45' });
    workers = await startTestWorkers(t);
  });
  after(async () => {
    await workers?.close();
    await t?.close();
  });

  const group = (s: Session, memberIds: string[], name: string) => api(s, 'POST', '/api/rooms', { type: 'PRIVATE_GROUP', name, memberIds });

  it('one stranger: 40 invitations an hour, the 41st refused with a coded 429 and Retry-After (no room made); the member pushed once', async () => {
    const [stranger, member] = await Promise.all([makeUser(t), makeUser(t)]);
    const token = `fcm-spam-${member.deviceId}`;
    assert.equal((await api(member, 'PUT', '/api/devices/push-token', { token, provider: 'FCM' })).statusCode, 204);
    for (let i = 1; i <= 40; i++) {
      const made = await group(stranger, [member.userId], `Spam ${i}`);
      assert.equal(made.statusCode, 200, `invitation ${i}: ${made.body}`);
    }
    const refused = await group(stranger, [member.userId], 'Spam 41');
    assert.equal(refused.statusCode, 429);
    assert.equal(refused.json().code, 'TOO_MANY_INVITATIONS');
    assert.ok(Number(refused.headers['retry-after']) > 0);
    assert.equal(await t.db.collection('rooms').countDocuments({ creatorId: stranger.userId }), 40, 'the refused creation made no room');
    const waiting = (await api(member, 'GET', '/api/rooms/invitations?pageSize=100')).json() as { items: unknown[] };
    assert.equal(waiting.items.length, 40);

    // Every invitation reached the inbox; one push went out for the forty (the queue drained, then counted).
    await until(async () => (await t.db.collection('push_records').countDocuments({ token })) >= 1, 'the first invitation\'s push');
    await until(async () => {
      const counts = await jobCounts(t, QUEUES.push);
      return counts.waiting + counts.active + counts.delayed === 0;
    }, 'the push queue to drain');
    assert.equal(await t.db.collection('push_records').countDocuments({ token }), 1);
  });

  it('a member with too many strangers\' invitations waiting takes no more: 429', async () => {
    const member = await makeUser(t);
    const strangers = await Promise.all(Array.from({ length: 46 }, () => makeUser(t)));
    for (const [i, stranger] of strangers.slice(0, 45).entries()) assert.equal((await group(stranger, [member.userId], `Room ${i}`)).statusCode, 200);
    const refused = await group(strangers[45]!, [member.userId], 'One too many');
    assert.equal(refused.statusCode, 429);
    assert.equal(refused.json().code, 'TOO_MANY_INVITATIONS');
    // Once one is answered there is room again.
    const first = (await api(member, 'GET', '/api/rooms/invitations?pageSize=1')).json().items[0] as { room: { id: string } };
    assert.equal((await api(member, 'POST', `/api/rooms/${first.room.id}/invitation?accept=false`)).statusCode, 200);
    assert.equal((await group(strangers[45]!, [member.userId], 'Now it fits')).statusCode, 200);
  });

  it('declining blocks and reports the inviter in one step', async () => {
    const [stranger, member] = await Promise.all([makeUser(t), makeUser(t)]);
    const room = (await group(stranger, [member.userId], 'Unwanted')).json() as { id: string };
    const answered = await api(member, 'POST', `/api/rooms/${room.id}/invitation?accept=false&block=true&report=true&reason=SPAM`);
    assert.equal(answered.statusCode, 200, answered.body);
    assert.equal(answered.json().status, 'DECLINED');
    assert.equal(await t.db.collection('blocks').countDocuments({ blockerId: member.userId, blockedId: stranger.userId }), 1);
    const reportDoc = await t.db.collection('reports').findOne({ reporterId: member.userId, targetType: 'USER', targetId: stranger.userId });
    assert.equal(reportDoc?.reason, 'SPAM');
    assert.equal(reportDoc?.status, 'OPEN');
    const other = (await group(stranger, [member.userId], 'Again')).json() as { id?: string; code?: string };
    assert.equal(other.code, 'BLOCKED', 'the block refuses the stranger\'s next invitation');
  });
});
