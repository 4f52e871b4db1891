import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { bearer, signIn, startTestApp, type Session, type TestApp } from '../helpers/app.js';
import { makeRoom } from '../helpers/factories.js';
import { multipart } from '../helpers/multipart.js';

describe('attachment tickets', () => {
  let t: TestApp;
  let owner: Session;
  let member: Session;
  let roomId: string;
  let messageId: string;
  let ids: Record<string, string>;
  const bytes = Buffer.from(Array.from({ length: 1000 }, (_, i) => i % 256));

  before(async () => {
    t = await startTestApp({ TICKET_TTL: '2' });
    [owner, member] = await Promise.all([signIn(t), signIn(t)]);
    roomId = (await makeRoom(t, owner, { members: [member] })).id;
    const body = multipart([{ filename: 'data.bin', content: bytes }, { filename: 'other.txt', content: Buffer.from('other file') }]);
    await t.app.inject({ method: 'POST', url: `/api/messages/${roomId}/attachments`, headers: { ...bearer(owner.accessToken), ...body.headers }, payload: body.payload });
    const list = (await t.app.inject({ url: `/api/messages/${roomId}/attachments`, headers: bearer(owner.accessToken) })).json().items;
    ids = Object.fromEntries(list.map((a: { filename: string; id: string }) => [a.filename, a.id]));
    messageId = list[0].messageId;
  });
  after(() => t.close());

  const ticket = (s: Session, attachmentId: string, message = messageId) =>
    t.app.inject({ method: 'POST', url: `/api/messages/${message}/attachments/${attachmentId}/ticket`, headers: bearer(s.accessToken) });
  const open = (url: string, headers: Record<string, string> = {}) => t.app.inject({ url: new URL(url).pathname + new URL(url).search, headers });

  it('opens that one attachment without the Authorization header, with ranges', async () => {
    const res = await ticket(member, ids['data.bin']!);
    assert.equal(res.statusCode, 200);
    const { url, expiresAt } = res.json();
    assert.match(url, /\/media\/[^/]+$/);
    assert.ok(Date.parse(expiresAt) - Date.now() <= 2000);
    const file = await open(url);
    assert.equal(file.statusCode, 200);
    assert.deepEqual(file.rawPayload, bytes);
    assert.equal(file.headers['content-length'], '1000');
    const part = await open(url, { range: 'bytes=10-19' });
    assert.equal(part.statusCode, 206);
    assert.equal(part.headers['content-range'], 'bytes 10-19/1000');
    assert.deepEqual(part.rawPayload, bytes.subarray(10, 20));
    assert.deepEqual((await open(url, { range: 'bytes=-5' })).rawPayload, bytes.subarray(995));
    assert.equal((await open(url, { range: 'bytes=5000-' })).statusCode, 416);
    assert.equal((await open(`${url}?variant=thumbnail`)).json().code, 'VARIANT_NOT_AVAILABLE');
  });

  it('opens nothing else: not other attachments, not the API, and an access token is no ticket', async () => {
    const { url } = (await ticket(member, ids['data.bin']!)).json();
    const token = new URL(url).pathname.split('/').at(-1)!;
    // The ticket is not an access token.
    assert.equal((await t.app.inject({ url: '/api/users/me', headers: bearer(token) })).statusCode, 401);
    assert.equal((await t.app.inject({ url: `/api/messages/${roomId}/attachments`, headers: bearer(token) })).statusCode, 401);
    // An access token is not a ticket, and a tampered ticket opens nothing.
    assert.equal((await t.app.inject({ url: `/media/${member.accessToken}` })).json().code, 'TICKET_INVALID');
    const tampered = `${token.slice(0, -3)}${token.endsWith('AAA') ? 'BBB' : 'AAA'}`;
    assert.equal((await t.app.inject({ url: `/media/${tampered}` })).statusCode, 401);
    // The other file needs a ticket of its own.
    const other = await open((await ticket(member, ids['other.txt']!)).json().url);
    assert.equal(other.payload, 'other file');
  });

  it('a ticket needs access to the room and the attachment of that message', async () => {
    const outsider = await signIn(t);
    assert.equal((await ticket(outsider, ids['data.bin']!)).json().code, 'ROOM_NOT_FOUND');
    assert.equal((await ticket(member, ids['data.bin']!, 'ffffffffffffffffffffffff')).json().code, 'ATTACHMENT_NOT_FOUND');
    assert.equal((await ticket(member, 'no-such-attachment')).json().code, 'ATTACHMENT_NOT_FOUND');
  });

  it('expires after its life', async () => {
    const { url } = (await ticket(owner, ids['data.bin']!)).json();
    assert.equal((await open(url)).statusCode, 200);
    t.clock.advance(3100);
    const expired = await open(url);
    assert.equal(expired.statusCode, 401);
    assert.equal(expired.json().code, 'TICKET_EXPIRED');
  });
});
