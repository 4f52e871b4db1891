import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import sharp from 'sharp';
import { MAX_WALLETS_PER_USER } from '../../src/wallets/wallets.service.js';
import { bearer, freshPhone, lastCode, readOutbox, signIn, startTestApp, type Session, type TestApp } from '../helpers/app.js';
import { httpAs, makeUser } from '../helpers/factories.js';
import { multipart } from '../helpers/multipart.js';
import { until } from '../helpers/wait.js';

interface Sms {
  to: string;
  text: string;
}
const outbox = async (t: TestApp): Promise<Sms[]> => readOutbox<Sms>(t.outbox);

/**
 * What one account can make the service do to others: invitations by SMS bounded per sender, with a
 * fixed text and budgets of their own; and every "at most N" holding when requests race.
 */
describe('abuse limits: invitations by SMS, and limits under concurrency', () => {
  let t: TestApp;
  const api = httpAs(() => t);

  before(async () => {
    t = await startTestApp({
      CONTACT_INVITES_PER_HOUR: '3',
      CONTACT_INVITES_PER_DAY: '100',
      // Invitations have two texts an hour in all; sign-in codes keep plenty of their own.
      SMS_INVITE_BUDGET_GLOBAL_HOUR: '2',
      SMS_BUDGET_GLOBAL_HOUR: '100000',
      ROOM_INVITATIONS_WAITING: '10',
    });
  });
  after(() => t.close());

  const invite = (s: Session, query: Record<string, string>) => api(s, 'POST', `/api/users/connection-requests?${new URLSearchParams(query)}`);
  const named = async (name: string) => {
    const s = await signIn(t);
    assert.equal((await api(s, 'PATCH', '/api/users/me', { displayName: name })).statusCode, 200);
    return s;
  };

  it('an invitation is a fixed text: the display name cleaned of links and numbers, never the sender\'s number or their words', async () => {
    const crook = await named('Bank Security https://evil.example/x +1 (415) 555-0100 www.ev.il');
    const to = freshPhone();
    assert.equal((await invite(crook, { phone: to, customMessage: 'Your account is locked. Verify now at http://evil.example' })).statusCode, 204);
    const nameless = await signIn(t);
    const namelessPhone = (await api(nameless, 'GET', '/api/users/me')).json().phone as string;
    const other = freshPhone();
    assert.equal((await invite(nameless, { phone: other })).statusCode, 204);
    await until(async () => (await outbox(t)).filter((m) => m.to === to || m.to === other).length === 2, 'both invitations', 5_000);
    const [fromCrook] = (await outbox(t)).filter((m) => m.to === to);
    assert.equal(fromCrook!.text, 'Bank Security invites you to Chat Platform. Sign in with this number to answer.');
    const [fromNameless] = (await outbox(t)).filter((m) => m.to === other);
    assert.equal(fromNameless!.text, 'A contact invites you to Chat Platform. Sign in with this number to answer.');
    assert.ok(!fromNameless!.text.includes(namelessPhone.slice(-6)), 'the sender\'s number is never in it');
  });

  it('invitations spend SMS budgets of their own: once theirs is spent they wait, and sign-in codes still go out at once', async () => {
    // Two invitations were texted above: the invitations' budget of two an hour is spent.
    const before = (await outbox(t)).length;
    const senders = await Promise.all([signIn(t), signIn(t), signIn(t)]);
    const invited = senders.map(() => freshPhone());
    for (const [i, sender] of senders.entries()) assert.equal((await invite(sender, { phone: invited[i]! })).statusCode, 204, 'accepted: the text waits for the budget');
    const sent = (await outbox(t)).slice(before);
    assert.equal(sent.filter((m) => invited.includes(m.to)).length, 0, 'no invitation past the budget');
    const stored = await t.db.collection('connection_requests').find({ recipientPhone: { $in: invited } }).toArray();
    assert.equal(stored.length, 3, 'kept, to be sent when the budget allows');
    // Sign-in is untouched: a code is sent at once.
    const phone = freshPhone();
    assert.equal((await t.app.inject({ method: 'POST', url: '/api/auth/code', payload: { phone }, remoteAddress: '10.9.9.9' })).statusCode, 204);
    assert.match(await lastCode(t.outbox, phone), /^\d{6}$/);
  });

  it('requests by phone or e-mail are limited per sender, counted alike whether or not the address has an account: the 4th of the hour is a 429 either way', async () => {
    const owner = await signIn(t);
    const ownerPhone = (await api(owner, 'GET', '/api/users/me')).json().phone as string;
    for (const [first, fourth] of [[{ phone: ownerPhone }, { phone: freshPhone() }], [{ phone: freshPhone() }, { phone: ownerPhone }]] as const) {
      const sender = await signIn(t);
      assert.equal((await invite(sender, first)).statusCode, 204);
      assert.equal((await invite(sender, { phone: freshPhone() })).statusCode, 204);
      assert.equal((await invite(sender, { email: `someone-${Date.now()}@example.org` })).statusCode, 204);
      const refused = await invite(sender, fourth);
      assert.equal(refused.statusCode, 429);
      assert.equal(refused.json().code, 'TOO_MANY_CONTACT_INVITES');
      assert.ok(Number(refused.headers['retry-after']) > 0);
      // A request by user id is not a lookup and is not limited by it.
      const other = await signIn(t);
      assert.equal((await invite(sender, { recipientId: other.userId })).statusCode, 204);
    }
  });

  it('the limit of invitations waiting for one member holds when two strangers fire room creations at once', async () => {
    const member = await makeUser(t);
    const strangers = await Promise.all([makeUser(t), makeUser(t)]);
    const answers = await Promise.all(
      strangers.flatMap((stranger, s) => Array.from({ length: 12 }, (_, i) => api(stranger, 'POST', '/api/rooms', { type: 'PRIVATE_GROUP', name: `Race ${s}-${i}`, memberIds: [member.userId] }))),
    );
    const made = answers.filter((answer) => answer.statusCode === 200).length;
    const refused = answers.filter((answer) => answer.statusCode === 429 && answer.json().code === 'TOO_MANY_INVITATIONS').length;
    assert.equal(made + refused, 24, answers.map((answer) => answer.statusCode).join(','));
    const waiting = await t.db.collection('room_invitations').countDocuments({ inviteeId: member.userId, status: 'PENDING' });
    assert.ok(waiting <= 10, `${waiting} invitations wait (at most 10)`);
    assert.equal(waiting, made, 'every room made has its invitation');
    assert.ok(made > 0);
  });

  it('at most 20 wallets per member, however many creations race', async () => {
    const owner = await signIn(t);
    const answers = await Promise.all(Array.from({ length: MAX_WALLETS_PER_USER + 6 }, (_, i) => api(owner, 'POST', '/api/wallets', { currency: i % 2 ? 'ETH' : 'USDT' })));
    const codes = answers.filter((answer) => answer.statusCode !== 200).map((answer) => answer.json().code as string);
    assert.ok(codes.every((code) => code === 'WALLET_LIMIT_REACHED'), codes.join(','));
    const count = await t.db.collection('ledger_accounts').countDocuments({ userId: owner.userId, kind: 'WALLET' });
    assert.ok(count <= MAX_WALLETS_PER_USER, `${count} wallets`);
    assert.equal(count, answers.length - codes.length);
  });

  it('at most 20 files of one member in processing, however many uploads race', async () => {
    const owner = await signIn(t);
    const room = (await api(owner, 'POST', '/api/rooms', { type: 'PRIVATE_GROUP', name: 'Uploads race', memberIds: [] })).json().id as string;
    const png = await sharp({ create: { width: 8, height: 8, channels: 3, background: '#ff0000' } }).png().toBuffer();
    const upload = () => {
      const body = multipart(Array.from({ length: 8 }, (_, i) => ({ filename: `${i}.png`, content: png })), { payload: JSON.stringify({ roomId: room, message: 'pics' }) });
      return t.app.inject({ method: 'POST', url: `/api/messages/${room}/attachments`, headers: { ...bearer(owner.accessToken), ...body.headers }, payload: body.payload });
    };
    const answers = await Promise.all([upload(), upload(), upload(), upload()]);
    const processing = await t.db.collection('attachments').countDocuments({ uploaderId: owner.userId, status: 'PROCESSING' });
    assert.ok(processing <= 20, `${processing} in processing: ${answers.map((answer) => answer.statusCode).join(',')}`);
    assert.equal(processing, 8 * answers.filter((answer) => answer.statusCode === 204).length);
    assert.ok(answers.some((answer) => answer.statusCode === 429 && answer.json().code === 'LIMIT_FILES_IN_PROCESSING'));
  });
});
