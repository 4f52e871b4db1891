import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { bearer, freshPhone, lastCode, signIn, startTestApp, type Session, type TestApp } from '../helpers/app.js';
import { httpAs, makeRoom, makeUser, postMessage } from '../helpers/factories.js';
import { DeviceClient, spawnHub, type HubProcess } from '../helpers/hubs.js';
import { startAppServer } from '../helpers/app-server.js';

describe('reports and moderation (issue 46, items 3 and 4)', () => {
  let t: TestApp;
  let hub: HubProcess;
  let admin: Session;
  const adminPhone = freshPhone();
  const api = httpAs(() => t);
  const clients: DeviceClient[] = [];

  before(async () => {
    t = await startTestApp({ ADMIN_PHONES: adminPhone, REPORTS_PER_HOUR: '5', WEBHOOK_ALLOW_PRIVATE: 'true' });
    hub = await spawnHub(t.config);
    admin = await signIn(t, adminPhone);
  });
  after(async () => {
    for (const client of clients) client.close();
    await hub?.kill();
    await t?.close();
  });

  const report = (s: Session, body: object) => api(s, 'POST', '/api/reports', { reason: 'HARASSMENT', ...body });

  it('a member reports what they can see, once per target; a stranger gets the same 400 as for nothing; block=true blocks', async () => {
    const [author, reader, stranger] = await Promise.all([makeUser(t), makeUser(t), makeUser(t)]);
    const room = await makeRoom(t, author, { members: [reader] });
    const messageId = await postMessage(t, author, room.id, 'Something nasty');

    const first = await report(reader, { targetType: 'MESSAGE', targetId: messageId, comment: 'Not OK', block: true });
    assert.equal(first.statusCode, 200, first.body);
    assert.equal(first.json().status, 'OPEN');
    const again = await report(reader, { targetType: 'MESSAGE', targetId: messageId, reason: 'SPAM' });
    assert.equal(again.json().id, first.json().id, 'a repeat answers the first');
    assert.equal(await t.db.collection('blocks').countDocuments({ blockerId: reader.userId, blockedId: author.userId }), 1);

    // A stranger to the room, and a message that does not exist: one answer.
    const notMine = await report(stranger, { targetType: 'MESSAGE', targetId: messageId });
    const missing = await report(stranger, { targetType: 'MESSAGE', targetId: 'f'.repeat(24) });
    assert.equal(notMine.statusCode, 400);
    assert.deepEqual([notMine.json().code, notMine.json().message], [missing.json().code, missing.json().message]);
    assert.equal(notMine.json().code, 'REPORT_TARGET_NOT_FOUND');
    assert.equal((await report(stranger, { targetType: 'ROOM', targetId: room.id })).json().code, 'REPORT_TARGET_NOT_FOUND');
    assert.equal((await report(stranger, { targetType: 'USER', targetId: stranger.userId })).json().code, 'REPORT_SELF');
    assert.equal((await report(stranger, { targetType: 'USER', targetId: author.userId })).statusCode, 200);
    // Bounds: a comment of 500 characters is taken, 501 refused; an unknown reason refused.
    assert.equal((await report(author, { targetType: 'USER', targetId: stranger.userId, comment: 'x'.repeat(501) })).statusCode, 400);
    assert.equal((await report(author, { targetType: 'USER', targetId: stranger.userId, comment: 'x'.repeat(500) })).statusCode, 200);
    assert.equal((await report(author, { targetType: 'USER', targetId: reader.userId, reason: 'BORING' })).statusCode, 400);
  });

  it('limits reports per reporter and hour with a coded 429 and Retry-After', async () => {
    const reporter = await makeUser(t);
    const targets = await Promise.all(Array.from({ length: 6 }, () => makeUser(t)));
    const answers = [];
    for (const target of targets) answers.push(await report(reporter, { targetType: 'USER', targetId: target.userId, reason: 'SPAM' }));
    assert.deepEqual(answers.map((a) => a.statusCode), [200, 200, 200, 200, 200, 429]);
    assert.equal(answers[5]!.json().code, 'TOO_MANY_REPORTS');
    assert.ok(Number(answers[5]!.headers['retry-after']) > 0);
  });

  it('in an end-to-end encrypted room the reporter\'s decrypted text is kept, marked as theirs', async () => {
    const [author, reader] = await Promise.all([makeUser(t), makeUser(t)]);
    const room = await makeRoom(t, author, { type: 'E2EE', members: [reader] });
    const messageId = await postMessage(t, author, room.id, Buffer.alloc(40, 7).toString('base64'));
    const made = await report(reader, { targetType: 'MESSAGE', targetId: messageId, decryptedText: 'what the phone decrypted' });
    assert.equal(made.statusCode, 200, made.body);
    const queue = (await api(admin, 'GET', '/api/admin/reports?pageSize=200')).json() as { items: { targetId: string; reports: { decryptedText: string | null }[] }[] };
    assert.equal(queue.items.find((item) => item.targetId === messageId)?.reports[0]?.decryptedText, 'what the phone decrypted');
  });

  it('administrators see open reports grouped by target, oldest first, and suspend a user: sockets close at once, sign-in refused with the reason until lifted; every action audited, reporters told', async () => {
    const phone = freshPhone();
    const offender = await signIn(t, phone);
    const [a, b] = await Promise.all([makeUser(t), makeUser(t)]);
    assert.equal((await report(a, { targetType: 'USER', targetId: offender.userId })).statusCode, 200);
    assert.equal((await report(b, { targetType: 'USER', targetId: offender.userId, reason: 'SPAM' })).statusCode, 200);

    // Members get the same 401 as for any route they may not use.
    for (const [method, url, body] of [['GET', '/api/admin/reports'], ['POST', '/api/admin/reports/actions', { targetType: 'USER', targetId: offender.userId, action: 'SUSPEND_USER', reason: 'x' }], ['GET', '/api/admin/audit']] as const) {
      const refused = await api(a, method, url, body);
      assert.equal(refused.statusCode, 401, `${method} ${url}`);
      assert.equal(refused.json().code, 'UNAUTHORIZED');
    }

    const queue = (await api(admin, 'GET', '/api/admin/reports?pageSize=200')).json() as { items: { targetType: string; targetId: string; openReports: number; firstReportedAt: string }[] };
    const group = queue.items.find((item) => item.targetId === offender.userId);
    assert.equal(group?.openReports, 2);
    const times = queue.items.map((item) => Date.parse(item.firstReportedAt));
    assert.deepEqual(times, [...times].sort((x, y) => x - y), 'oldest first');

    const watchers = [new DeviceClient(a.accessToken), new DeviceClient(b.accessToken)];
    const socket = new DeviceClient(offender.accessToken);
    clients.push(socket, ...watchers);
    await Promise.all([socket.connect(hub.port), ...watchers.map((watcher) => watcher.connect(hub.port))]);
    const closed = socket.disconnected();
    const wrongAction = await api(admin, 'POST', '/api/admin/reports/actions', { targetType: 'USER', targetId: offender.userId, action: 'UNLIST_APP', reason: 'x' });
    assert.equal(wrongAction.json().code, 'MODERATION_ACTION_INVALID');
    const acted = await api(admin, 'POST', '/api/admin/reports/actions', { targetType: 'USER', targetId: offender.userId, action: 'SUSPEND_USER', reason: 'Harassing other members' });
    assert.equal(acted.statusCode, 200, acted.body);
    assert.deepEqual(acted.json(), { decidedReports: 2 });
    assert.equal(await closed, 'io server disconnect');
    assert.equal((await t.app.inject({ url: '/api/users/me', headers: bearer(offender.accessToken) })).statusCode, 401);
    for (const watcher of watchers) {
      await watcher.until((received) => received.some((e) => e.event === 'report.decided' && e.data.targetId === offender.userId));
      assert.equal(watcher.received.find((e) => e.event === 'report.decided')?.data.outcome, 'USER_SUSPENDED');
    }

    // Sign-in is refused with a coded 403 and the reason.
    const signInAgain = async () => {
      await t.app.inject({ method: 'POST', url: '/api/auth/code', payload: { phone } });
      return t.app.inject({ method: 'POST', url: '/api/auth/login', payload: { phone, code: await lastCode(t.outbox, phone), device: { name: 'Phone', platform: 'IOS' } } });
    };
    const refused = await signInAgain();
    assert.equal(refused.statusCode, 403);
    assert.equal(refused.json().code, 'ACCOUNT_SUSPENDED');
    assert.match(refused.json().message, /Harassing other members/);
    assert.equal((await api(admin, 'POST', `/api/admin/users/${offender.userId}/suspension/lift`, { reason: 'Appeal granted' })).statusCode, 204);
    assert.equal((await signInAgain()).statusCode, 200);

    const audit = (await api(admin, 'GET', '/api/admin/audit')).json() as { items: { action: string; targetId: string; adminId: string; reason: string }[] };
    assert.deepEqual(audit.items.filter((entry) => entry.targetId === offender.userId).map((entry) => [entry.action, entry.adminId, entry.reason]), [
      ['LIFT_SUSPENSION', admin.userId, 'Appeal granted'],
      ['SUSPEND_USER', admin.userId, 'Harassing other members'],
    ]);
    assert.ok(!(await api(admin, 'GET', '/api/admin/reports?pageSize=200')).json().items.some((item: { targetId: string }) => item.targetId === offender.userId), 'decided reports leave the queue');
  });

  it('removes a reported message for everyone, unlists a reported app for good, and dismisses', async () => {
    const [author, reader] = await Promise.all([makeUser(t), makeUser(t)]);
    const room = await makeRoom(t, author, { members: [reader] });
    const messageId = await postMessage(t, author, room.id, 'Remove me');
    await report(reader, { targetType: 'MESSAGE', targetId: messageId });
    assert.equal((await api(admin, 'POST', '/api/admin/reports/actions', { targetType: 'MESSAGE', targetId: messageId, action: 'REMOVE_MESSAGE', reason: 'Abuse' })).statusCode, 200);
    const items = (await api(reader, 'GET', `/api/messages/${room.id}`)).json().items as { id: string; message: string }[];
    assert.equal(items.find((m) => m.id === messageId)?.message, '');

    const appServer = await startAppServer((_call, res) => void res.writeHead(204).end());
    try {
      const made = await api(author, 'POST', '/api/apps', { name: 'Listed app', webhookUrl: appServer.url });
      assert.equal(made.statusCode, 200, made.body);
      const appId = made.json().id as string;
      // Unlisted, a member who neither owns nor installed it cannot see it.
      assert.equal((await report(reader, { targetType: 'APP', targetId: appId })).json().code, 'REPORT_TARGET_NOT_FOUND');
      assert.equal((await api(author, 'PATCH', `/api/apps/${appId}`, { public: true })).statusCode, 200);
      assert.equal((await report(reader, { targetType: 'APP', targetId: appId, reason: 'SPAM' })).statusCode, 200);
      assert.equal((await api(admin, 'POST', '/api/admin/reports/actions', { targetType: 'APP', targetId: appId, action: 'UNLIST_APP', reason: 'Scam' })).statusCode, 200);
      assert.equal((await t.db.collection('apps').findOne({ _id: appId as never }))?.public, false);
      const relist = await api(author, 'PATCH', `/api/apps/${appId}`, { public: true });
      assert.equal(relist.statusCode, 400);
      assert.equal(relist.json().code, 'APP_UNLISTED');
    } finally {
      await appServer.close();
    }

    const other = await makeUser(t);
    await report(reader, { targetType: 'USER', targetId: other.userId, reason: 'OTHER' });
    assert.deepEqual((await api(admin, 'POST', '/api/admin/reports/actions', { targetType: 'USER', targetId: other.userId, action: 'DISMISS', reason: 'Nothing wrong' })).json(), { decidedReports: 1 });
    assert.equal((await api(admin, 'POST', '/api/admin/reports/actions', { targetType: 'USER', targetId: other.userId, action: 'DISMISS', reason: 'Again' })).json().code, 'NOTHING_TO_DECIDE');
  });
});
