import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Workers } from '../../workers/main.js';
import { bearer, freshPhone, readOutbox, signIn, startTestApp, startTestWorkers, type Session, type TestApp, recordedPush } from '../helpers/app.js';
import { until } from '../helpers/wait.js';
import { DeviceClient, spawnHub, type HubProcess } from '../helpers/hubs.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('connection requests, connections and blocks', () => {
  let t: TestApp;
  let workers: Workers;
  let hub: HubProcess;
  const clients: DeviceClient[] = [];

  before(async () => {
    t = await startTestApp();
    workers = await startTestWorkers(t);
    hub = await spawnHub(t.config);
  });
  after(async () => {
    for (const c of clients) c.close();
    await hub.kill();
    await workers.close();
    await t.close();
  });

  const send = (s: Session, query: Record<string, string>) =>
    t.app.inject({ method: 'POST', url: `/api/users/connection-requests?${new URLSearchParams(query)}`, headers: bearer(s.accessToken) });
  const answer = (s: Session, id: string, query: Record<string, string>) =>
    t.app.inject({ method: 'POST', url: `/api/users/connection-requests/incoming/${id}?${new URLSearchParams(query)}`, headers: bearer(s.accessToken) });
  const list = async (s: Session, query = '') => (await t.app.inject({ url: `/api/users/connection-requests${query}`, headers: bearer(s.accessToken) })).json();
  /** The confirmation code the `index`-th newest mail to `address` carries (the e-mail outbox). */
  const mailedCode = async (address: string, index = 0): Promise<string> => {
    const mails = await readOutbox<{ to: string; subject: string }>(t.config.EMAIL_OUTBOX_FILE);
    const codes = mails.filter((m) => m.to === address.toLowerCase() && /confirmation code/.test(m.subject)).map((m) => /(\d{6})$/.exec(m.subject)![1]!);
    return codes.reverse()[index]!;
  };
  /** Gives `address` and confirms it with the mailed code, as a phone does. */
  const confirmedEmail = async (s: Session, address: string) => {
    assert.equal((await t.app.inject({ method: 'PATCH', url: '/api/users/me', headers: bearer(s.accessToken), payload: { email: address } })).statusCode, 200);
    const confirmed = await t.app.inject({ method: 'POST', url: '/api/users/me/email/confirm', headers: bearer(s.accessToken), payload: { code: await mailedCode(address) } });
    assert.equal(confirmed.statusCode, 200, confirmed.body);
    return confirmed.json() as { email: string | null; emailPending: string | null };
  };
  const named = async (name: string, phone = freshPhone()) => {
    const s = await signIn(t, phone);
    await t.app.inject({ method: 'PATCH', url: '/api/users/me', headers: bearer(s.accessToken), payload: { displayName: name } });
    return s;
  };

  it('a request to an existing user reaches their socket; accepting connects both, and the sender hears it', async () => {
    const alice = await named('Alice');
    const bob = await named('Bob');
    const bobPhone = new DeviceClient(bob.accessToken);
    const alicePhone = new DeviceClient(alice.accessToken);
    clients.push(bobPhone, alicePhone);
    await bobPhone.connect(hub.port);
    await alicePhone.connect(hub.port);

    assert.equal((await send(alice, { recipientId: bob.userId, customMessage: 'Hi Bob' })).statusCode, 204);
    await bobPhone.until((r) => r.some((e) => e.event === 'contact.request'));
    const notice = bobPhone.received.find((e) => e.event === 'contact.request')!;
    assert.deepEqual(notice.data.sender, { id: alice.userId, deleted: false, displayName: 'Alice', avatarUrl: null, avatarThumbnailUrl: null });
    assert.equal(notice.data.customMessage, 'Hi Bob');

    const incoming = await list(bob);
    assert.equal(incoming.items[0].direction, 'INCOMING');
    assert.equal(incoming.items[0].status, 'PENDING');
    assert.equal(incoming.pageSize, 100);
    assert.equal((await list(alice)).items[0].direction, 'OUTGOING');

    const accepted = await answer(bob, String(notice.data.requestId), { accept: 'true' });
    assert.equal(accepted.statusCode, 200);
    assert.deepEqual(accepted.json(), { id: alice.userId, deleted: false, displayName: 'Alice', avatarUrl: null, avatarThumbnailUrl: null });
    await alicePhone.until((r) => r.some((e) => e.event === 'contact.accepted'));
    const connections = await t.app.inject({ url: '/api/users/connections', headers: bearer(alice.accessToken) });
    assert.deepEqual(connections.json().items.map((c: { user: { id: string } }) => c.user.id), [bob.userId]);
    // Answered requests stay listed.
    assert.equal((await list(bob)).items[0].status, 'ACCEPTED');

    // Now connected: another request either way is refused.
    assert.equal((await send(alice, { recipientId: bob.userId })).json().code, 'ALREADY_CONNECTED');
    assert.equal((await send(bob, { recipientId: alice.userId })).json().code, 'ALREADY_CONNECTED');
    // And answering again is refused.
    assert.equal((await answer(bob, String(notice.data.requestId), { accept: 'true' })).json().code, 'REQUEST_ALREADY_ANSWERED');
  });

  it('every 400 and the 401 of the request rules', async () => {
    const me = await signIn(t);
    const other = await signIn(t);
    const expect400 = async (query: Record<string, string>, code: string) => {
      const res = await send(me, query);
      assert.equal(res.statusCode, 400, `${JSON.stringify(query)} → ${res.body}`);
      assert.equal(res.json().code, code);
    };
    await expect400({}, 'RECIPIENT_REQUIRED');
    await expect400({ email: 'not-an-email' }, 'EMAIL_INVALID');
    await expect400({ phone: '+1 000 1' }, 'PHONE_INVALID');
    await expect400({ recipientId: me.userId }, 'REQUEST_TO_SELF');
    await expect400({ recipientId: other.userId, customMessage: 'x'.repeat(129) }, 'VALIDATION_FAILED');
    const unknown = await send(me, { recipientId: 'no-such-user' });
    assert.equal(unknown.statusCode, 401);
    assert.equal(unknown.json().code, 'RECIPIENT_UNKNOWN');

    // 128 characters is the edge that passes; a second request to the same person does not.
    assert.equal((await send(me, { recipientId: other.userId, customMessage: 'y'.repeat(128) })).statusCode, 204);
    await expect400({ recipientId: other.userId }, 'REQUEST_EXISTS');
    // Nor in the other direction.
    const reverse = await send(other, { recipientId: me.userId });
    assert.equal(reverse.json().code, 'REQUEST_EXISTS');

    // A block either way refuses requests.
    const blocker = await signIn(t);
    await t.app.inject({ method: 'POST', url: `/api/users/blocks?blockedUserId=${me.userId}&reason=SPAM`, headers: bearer(blocker.accessToken) });
    await expect400({ recipientId: blocker.userId }, 'BLOCKED');
    assert.equal((await send(blocker, { recipientId: me.userId })).json().code, 'BLOCKED');
    assert.equal(await t.db.collection('connection_requests').countDocuments({ senderId: me.userId }), 1);
  });

  it('finds users by phone and e-mail, and invites others by SMS and e-mail', async () => {
    const me = await named('Inviter');
    const byPhone = await signIn(t);
    const phoneOfIt = (await t.app.inject({ url: '/api/users/me', headers: bearer(byPhone.accessToken) })).json().phone;
    assert.equal((await send(me, { phone: phoneOfIt })).statusCode, 204);
    const byEmail = await signIn(t);
    await confirmedEmail(byEmail, `Person.${byEmail.userId}@Example.com`);
    assert.equal((await send(me, { email: `person.${byEmail.userId}@example.com` })).statusCode, 204);
    const mine = (await list(me)).items;
    assert.deepEqual(
      mine.map((r: { recipient: { id: string } | null }) => r.recipient?.id).sort(),
      [byPhone.userId, byEmail.userId].sort(),
    );

    // Someone without an account: an SMS invitation, which becomes a request when they sign up.
    const newcomerPhone = freshPhone();
    assert.equal((await send(me, { phone: newcomerPhone, customMessage: 'Join me' })).statusCode, 204);
    const sms = (await readOutbox<{ to: string; text: string }>(t.outbox)).filter((m) => m.to === newcomerPhone);
    assert.equal(sms.length, 1);
    // A fixed text naming the sender; their own words wait in the app.
    assert.equal(sms[0]!.text, 'Inviter invites you to Chat Platform. Sign in with this number to answer.');
    const newcomer = await signIn(t, newcomerPhone);
    const phoneClient = new DeviceClient(newcomer.accessToken);
    clients.push(phoneClient);
    await phoneClient.connect(hub.port);
    await phoneClient.until((r) => r.some((e) => e.event === 'contact.request'));
    const theirs = (await list(newcomer)).items;
    assert.equal(theirs.length, 1);
    assert.equal(theirs[0].direction, 'INCOMING');
    assert.equal(theirs[0].customMessage, 'Join me', 'the custom message is shown in the app');
    assert.equal((await answer(newcomer, theirs[0].id, { accept: 'true' })).statusCode, 200);

    // An e-mail invitation goes to the e-mail outbox.
    const address = `nobody-${Date.now()}@example.org`;
    assert.equal((await send(me, { email: address })).statusCode, 204);
    const mails = await readOutbox<{ to: string; subject: string }>(t.config.EMAIL_OUTBOX_FILE);
    assert.ok(mails.some((m) => m.to === address && /Inviter invites you/.test(m.subject)));
    // Asking again is a retry of the same invitation (issue 11): answered 204, and nothing is sent twice.
    assert.equal((await send(me, { email: address })).statusCode, 204);
    const again = await readOutbox<{ to: string }>(t.config.EMAIL_OUTBOX_FILE);
    assert.equal(again.filter((m) => m.to === address).length, 1);
  });

  it('lists requests sent to and by the caller newest first', async () => {
    const me = await named('Lister');
    const [a, b, c] = await Promise.all([signIn(t), signIn(t), signIn(t)]);
    assert.equal((await send(me, { recipientId: a.userId })).statusCode, 204);
    t.clock.advance(1_000);
    assert.equal((await send(b, { recipientId: me.userId })).statusCode, 204);
    t.clock.advance(1_000);
    assert.equal((await send(me, { recipientId: c.userId })).statusCode, 204);
    const items = (await list(me)).items as { direction: string; sender: { id: string }; recipient: { id: string } | null; createdAt: string }[];
    assert.deepEqual(
      items.map((r) => (r.direction === 'OUTGOING' ? r.recipient?.id : r.sender.id)),
      [c.userId, b.userId, a.userId],
    );
    assert.deepEqual(items.map((r) => r.direction), ['OUTGOING', 'INCOMING', 'OUTGOING']);
  });

  it('an offline recipient gets a recorded push', async () => {
    const sender = await named('Pusher');
    const offline = await signIn(t);
    await t.app.inject({ method: 'PUT', url: '/api/devices/push-token', headers: bearer(offline.accessToken), payload: { token: 'fcm-contact-offline', provider: 'FCM' } });
    await send(sender, { recipientId: offline.userId });
    const record = await recordedPush(t, { token: 'fcm-contact-offline' });
    assert.ok(record);
    assert.equal(record.message.data.event, 'contact.request');
    assert.match(record.message.alert.body, /Pusher wants to connect/);
  });

  it('declining with block blocks the sender with the reason; answering someone else\'s request is a 400', async () => {
    const sender = await signIn(t);
    const recipient = await signIn(t);
    const stranger = await signIn(t);
    await send(sender, { recipientId: recipient.userId });
    const request = (await list(recipient)).items[0];
    assert.equal((await answer(stranger, request.id, { accept: 'false' })).json().code, 'REQUEST_NOT_FOUND');
    assert.equal((await answer(sender, request.id, { accept: 'true' })).json().code, 'REQUEST_NOT_FOUND');
    assert.equal((await answer(recipient, 'no-such-request', { accept: 'true' })).json().code, 'REQUEST_NOT_FOUND');
    assert.equal((await answer(recipient, request.id, { accept: 'maybe' })).statusCode, 400);
    assert.equal((await answer(recipient, request.id, { accept: 'false', reason: 'NOT_A_REASON' })).statusCode, 400);

    const declined = await answer(recipient, request.id, { accept: 'false', reason: 'HARASSMENT', block: 'true' });
    assert.equal(declined.statusCode, 200);
    const blocks = await t.app.inject({ url: '/api/users/blocks', headers: bearer(recipient.accessToken) });
    assert.equal(blocks.json().pageSize, 10000);
    assert.deepEqual(
      blocks.json().items.map((b: { blockedUser: { id: string }; reason: string }) => [b.blockedUser.id, b.reason]),
      [[sender.userId, 'HARASSMENT']],
    );
    assert.equal((await list(recipient)).items[0].declineReason, 'HARASSMENT');
    // No connection came of it.
    assert.equal((await t.app.inject({ url: '/api/users/connections', headers: bearer(recipient.accessToken) })).json().totalItems, 0);
  });

  it('blocks: 400 for oneself, unknown users and repeats; newest first; unblock', async () => {
    const me = await signIn(t);
    const [a, b] = [await signIn(t), await signIn(t)];
    const block = (query: string) => t.app.inject({ method: 'POST', url: `/api/users/blocks?${query}`, headers: bearer(me.accessToken) });
    assert.equal((await block(`blockedUserId=${me.userId}`)).json().code, 'BLOCK_SELF');
    assert.equal((await block('blockedUserId=ghost')).json().code, 'USER_NOT_FOUND');
    assert.equal((await block(`blockedUserId=${a.userId}&reason=WHATEVER`)).statusCode, 400);
    assert.equal((await block('')).statusCode, 400);
    const first = await block(`blockedUserId=${a.userId}`);
    assert.equal(first.statusCode, 200);
    assert.equal(first.json().reason, 'UNKNOWN');
    await sleep(5);
    assert.equal((await block(`blockedUserId=${b.userId}&reason=DONT_KNOW_PERSON`)).statusCode, 200);
    assert.equal((await block(`blockedUserId=${a.userId}`)).json().code, 'ALREADY_BLOCKED');
    const listed = (await t.app.inject({ url: '/api/users/blocks?pageSize=1', headers: bearer(me.accessToken) })).json();
    assert.deepEqual([listed.items[0].blockedUser.id, listed.totalItems, listed.totalPages], [b.userId, 2, 2]);

    assert.equal((await t.app.inject({ method: 'DELETE', url: `/api/users/blocks/${a.userId}`, headers: bearer(me.accessToken) })).statusCode, 204);
    assert.equal((await t.app.inject({ method: 'DELETE', url: `/api/users/blocks/${a.userId}`, headers: bearer(me.accessToken) })).json().code, 'NOT_BLOCKED');
    assert.equal((await send(me, { recipientId: a.userId })).statusCode, 204);
  });

  it('a block cancels the pending request between the two', async () => {
    const sender = await signIn(t);
    const recipient = await signIn(t);
    await send(sender, { recipientId: recipient.userId });
    await t.app.inject({ method: 'POST', url: `/api/users/blocks?blockedUserId=${sender.userId}`, headers: bearer(recipient.accessToken) });
    assert.equal((await list(recipient)).items[0].status, 'CANCELLED');
  });

  it('the incoming-call setting: per connection, 400 when not connected, and calls honour it', async () => {
    const a = await signIn(t);
    const b = await signIn(t);
    const url = `/api/users/connections/${b.userId}/disable-incoming-calls`;
    assert.equal((await t.app.inject({ url, headers: bearer(a.accessToken) })).json().code, 'NOT_CONNECTED');
    assert.equal((await t.app.inject({ method: 'POST', url: `${url}?disableIncomingCalls=true`, headers: bearer(a.accessToken) })).json().code, 'NOT_CONNECTED');
    await send(a, { recipientId: b.userId });
    await answer(b, (await list(b)).items[0].id, { accept: 'true' });

    assert.deepEqual((await t.app.inject({ url, headers: bearer(a.accessToken) })).json(), { disableIncomingCalls: false });
    const set = await t.app.inject({ method: 'POST', url: `${url}?disableIncomingCalls=true`, headers: bearer(a.accessToken) });
    assert.deepEqual(set.json(), { disableIncomingCalls: true });
    assert.equal((await t.app.inject({ method: 'POST', url: `${url}?disableIncomingCalls=yes`, headers: bearer(a.accessToken) })).statusCode, 400);
    // a refuses calls from b; b's own setting is untouched.
    const call = await t.app.inject({ method: 'POST', url: '/api/calls', headers: bearer(b.accessToken), payload: { calleeId: a.userId } });
    assert.equal(call.json().code, 'CALL_NOT_ALLOWED');
    const back = `/api/users/connections/${a.userId}/disable-incoming-calls`;
    assert.deepEqual((await t.app.inject({ url: back, headers: bearer(b.accessToken) })).json(), { disableIncomingCalls: false });

    // Removing the connection ends the setting with it.
    assert.equal((await t.app.inject({ method: 'DELETE', url: `/api/users/connections/${b.userId}`, headers: bearer(a.accessToken) })).statusCode, 204);
    assert.equal((await t.app.inject({ url, headers: bearer(a.accessToken) })).json().code, 'NOT_CONNECTED');
    assert.equal((await t.app.inject({ method: 'DELETE', url: `/api/users/connections/${b.userId}`, headers: bearer(a.accessToken) })).json().code, 'NOT_CONNECTED');
  });

  it('an e-mail address counts once its owner confirmed the mailed code: before, requests by it invite by mail; setting one never says whether another account has it', async () => {
    const [owner, sender, squatter] = await Promise.all([signIn(t), signIn(t), signIn(t)]);
    const email = `owner-${Date.now()}@example.com`;
    // Someone else sets the address first: nothing says it is anyone's, and it does not become theirs.
    const squatted = await t.app.inject({ method: 'PATCH', url: '/api/users/me', headers: bearer(squatter.accessToken), payload: { email } });
    assert.equal(squatted.statusCode, 200);
    assert.deepEqual([squatted.json().email, squatted.json().emailPending], [null, email]);
    // A request by the address now finds nobody: it is an invitation by mail, not a request to the squatter.
    assert.equal((await send(sender, { email })).statusCode, 204);
    assert.equal((await list(squatter)).items.length, 0, 'an unconfirmed address receives no connection request');
    // Wrong codes are refused; the mailbox's owner confirms with the code that reached it.
    const wrong = await t.app.inject({ method: 'POST', url: '/api/users/me/email/confirm', headers: bearer(owner.accessToken), payload: { code: '000000' } });
    assert.equal(wrong.json().code, 'EMAIL_CODE_INVALID');
    const confirmed = await confirmedEmail(owner, email);
    assert.equal(confirmed.email, email);
    // The invitation sent to the address becomes the owner's request once confirmed.
    await until(async () => (await list(owner)).items.some((r: { direction: string }) => r.direction === 'INCOMING'), 'the invitation to become a request');
    assert.equal((await t.app.inject({ url: '/api/users/me', headers: bearer(squatter.accessToken) })).json().email, null);
    // Five wrong codes drop a waiting address.
    const other = `other-${Date.now()}@example.com`;
    await t.app.inject({ method: 'PATCH', url: '/api/users/me', headers: bearer(squatter.accessToken), payload: { email: other } });
    for (let i = 0; i < 5; i++) await t.app.inject({ method: 'POST', url: '/api/users/me/email/confirm', headers: bearer(squatter.accessToken), payload: { code: '999999' } });
    assert.equal((await t.app.inject({ url: '/api/users/me', headers: bearer(squatter.accessToken) })).json().emailPending, null);
    const right = await mailedCode(other);
    assert.equal((await t.app.inject({ method: 'POST', url: '/api/users/me/email/confirm', headers: bearer(squatter.accessToken), payload: { code: right } })).json().code, 'EMAIL_CODE_INVALID');
  });
});
