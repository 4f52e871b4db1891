import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import sharp from 'sharp';
import { MB } from '../../src/attachments/attachment-limits.js';
import { bearer, signIn, startTestApp, type Session, type TestApp } from '../helpers/app.js';
import { makeRoom, type RoomType } from '../helpers/factories.js';
import { multipart, type FilePart } from '../helpers/multipart.js';

const png = () => sharp({ create: { width: 64, height: 40, channels: 3, background: '#3366ff' } }).png().toBuffer();

describe('attachment uploads (no worker running: files stay in processing)', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp();
  });
  after(() => t.close());

  const upload = (s: Session, roomId: string, files: FilePart[], fields: Record<string, string> = {}) => {
    const body = multipart(files, fields);
    return t.app.inject({ method: 'POST', url: `/api/messages/${roomId}/attachments`, headers: { ...bearer(s.accessToken), ...body.headers }, payload: body.payload });
  };
  const counts = async (roomId: string) => ({
    messages: await t.db.collection('messages').countDocuments({ roomId }),
    attachments: await t.db.collection('attachments').countDocuments({ roomId }),
  });
  async function room(type: RoomType = 'PRIVATE_GROUP') {
    const [owner, member] = await Promise.all([signIn(t), signIn(t)]);
    const created = await makeRoom(t, owner, { type, members: [member] });
    return { id: created.id as string, owner, member };
  }

  it('posts the payload message first and attaches the files to it; lists newest first, 10 a page', async () => {
    const r = await room();
    const image = await png();
    const res = await upload(r.member, r.id, [{ filename: 'cat.png', content: image, contentType: 'image/png' }, { filename: 'notes.txt', content: Buffer.from('hello') }], {
      payload: JSON.stringify({ roomId: r.id, message: 'Look at this' }),
    });
    assert.equal(res.statusCode, 204, res.body);
    const messages = (await t.app.inject({ url: `/api/messages/${r.id}`, headers: bearer(r.member.accessToken) })).json().items;
    assert.equal(messages.length, 1);
    assert.equal(messages[0].message, 'Look at this');
    assert.equal(messages[0].attachmentIds.length, 2);
    const list = (await t.app.inject({ url: `/api/messages/${r.id}/attachments`, headers: bearer(r.owner.accessToken) })).json();
    assert.equal(list.pageSize, 10);
    const byName = Object.fromEntries(list.items.map((a: { filename: string }) => [a.filename, a]));
    assert.deepEqual([byName['cat.png'].kind, byName['cat.png'].status, byName['cat.png'].size], ['IMAGE', 'PROCESSING', image.length]);
    assert.deepEqual([byName['notes.txt'].kind, byName['notes.txt'].status], ['OTHER', 'READY']);
    assert.deepEqual(list.items.map((a: { id: string }) => a.id).sort(), [...messages[0].attachmentIds].sort());
    // Stored, and streamed back byte for byte.
    const stored = await t.ctx.repos.attachments.findById(byName['cat.png'].id);
    assert.equal(await t.ctx.platform.storage.size(stored!.storageKey), image.length);

    // Without a payload the files form a message of their own.
    assert.equal((await upload(r.owner, r.id, [{ filename: 'b.txt', content: Buffer.from('b') }])).statusCode, 204);
    const latest = (await t.app.inject({ url: `/api/messages/${r.id}?limit=1`, headers: bearer(r.owner.accessToken) })).json().items[0];
    assert.deepEqual([latest.message, latest.attachmentIds.length], ['', 1]);
    const newest = (await t.app.inject({ url: `/api/messages/${r.id}/attachments?pageSize=1`, headers: bearer(r.owner.accessToken) })).json();
    assert.equal(newest.items[0].filename, 'b.txt');
    assert.equal(newest.totalItems, 3);
  });

  it('10 files pass, 11 fail before anything is posted or stored', async () => {
    const r = await room();
    const files = (n: number) => Array.from({ length: n }, (_, i) => ({ filename: `f${i}.txt`, content: Buffer.from(`file ${i}`) }));
    assert.equal((await upload(r.member, r.id, files(10))).statusCode, 204);
    const before = await counts(r.id);
    const res = await upload(r.member, r.id, files(11), { payload: JSON.stringify({ roomId: r.id, message: 'eleven' }) });
    assert.equal(res.statusCode, 400);
    assert.equal(res.json().code, 'LIMIT_FILES_PER_UPLOAD');
    assert.deepEqual(await counts(r.id), before);
  });

  it('a file of exactly its class limit passes; one byte more fails naming the limit; classes go by extension', async () => {
    const r = await room();
    const exact = Buffer.alloc(25 * MB, 1);
    assert.equal((await upload(r.member, r.id, [{ filename: 'exact.jpg', content: exact }])).statusCode, 204);
    const before = await counts(r.id);
    const over = await upload(r.member, r.id, [{ filename: 'small.txt', content: Buffer.from('ok') }, { filename: 'over.jpg', content: Buffer.alloc(25 * MB + 1, 1) }], {
      payload: JSON.stringify({ roomId: r.id, message: 'should not appear' }),
    });
    assert.equal(over.statusCode, 400);
    assert.equal(over.json().code, 'LIMIT_FILE_SIZE_IMAGE');
    assert.match(over.json().message, /25 MB/);
    assert.deepEqual(await counts(r.id), before, 'nothing posted or stored');
    // The same size as audio is well within the audio limit.
    assert.equal((await upload(r.member, r.id, [{ filename: 'long.MP3', content: Buffer.alloc(25 * MB + 1, 1) }])).statusCode, 204);
  });

  for (const [kind, filename, limitMb] of [
    ['AUDIO', 'voice.m4a', 50],
    ['VIDEO', 'clip.mp4', 250],
    ['OTHER', 'archive.zip', 100],
  ] as const) {
    it(`${kind.toLowerCase()} files: exactly ${limitMb} MB passes, one byte more fails with LIMIT_FILE_SIZE_${kind}`, async () => {
      const r = await room();
      assert.equal((await upload(r.member, r.id, [{ filename, content: Buffer.alloc(limitMb * MB, 1) }])).statusCode, 204);
      const before = await counts(r.id);
      const over = await upload(r.member, r.id, [{ filename, content: Buffer.alloc(limitMb * MB + 1, 1) }]);
      assert.equal(over.statusCode, 400);
      assert.equal(over.json().code, `LIMIT_FILE_SIZE_${kind}`);
      assert.match(over.json().message, new RegExp(`${limitMb} MB`));
      assert.deepEqual(await counts(r.id), before, 'nothing posted or stored');
    });
  }

  it('an outsider cannot list a private room\'s attachments; anyone may list a public group\'s', async () => {
    const r = await room();
    assert.equal((await upload(r.member, r.id, [{ filename: 'notes.txt', content: Buffer.from('members only') }])).statusCode, 204);
    const outsider = await signIn(t);
    const refused = await t.app.inject({ url: `/api/messages/${r.id}/attachments`, headers: bearer(outsider.accessToken) });
    assert.equal(refused.statusCode, 400);
    assert.equal(refused.json().code, 'ROOM_NOT_FOUND');
    const member = await t.app.inject({ url: `/api/messages/${r.id}/attachments`, headers: bearer(r.member.accessToken) });
    assert.equal(member.json().totalItems, 1);
    const open = await room('PUBLIC_GROUP');
    assert.equal((await upload(open.owner, open.id, [{ filename: 'public.txt', content: Buffer.from('for all') }])).statusCode, 204);
    assert.equal((await t.app.inject({ url: `/api/messages/${open.id}/attachments`, headers: bearer(outsider.accessToken) })).statusCode, 200);
  });

  it('who may upload: members who may post; not in E2EE rooms; not in broadcast rooms unless creator or admin', async () => {
    const r = await room();
    const outsider = await signIn(t);
    const file = [{ filename: 'a.txt', content: Buffer.from('a') }];
    assert.equal((await upload(outsider, r.id, file)).json().code, 'NOT_A_MEMBER');
    const e2ee = await room('E2EE');
    assert.equal((await upload(e2ee.member, e2ee.id, file)).json().code, 'E2EE_USE_ENCRYPTED_UPLOAD');
    const broadcast = await room('BROADCAST');
    assert.equal((await upload(broadcast.member, broadcast.id, file)).json().code, 'PUBLISH_NOT_ALLOWED');
    assert.equal((await upload(broadcast.owner, broadcast.id, file)).statusCode, 204);
    assert.equal((await upload(r.member, r.id, [], { payload: 'not json' })).json().code, 'PAYLOAD_INVALID');
    assert.equal((await upload(r.member, r.id, [])).json().code, 'NO_FILES');
    const json = await t.app.inject({ method: 'POST', url: `/api/messages/${r.id}/attachments`, headers: bearer(r.member.accessToken), payload: { file: 'x' } });
    assert.equal(json.statusCode, 415);
  });

  it('the 21st file in processing gets 429', async () => {
    const r = await room();
    const images = async (n: number) => Promise.all(Array.from({ length: n }, async (_, i) => ({ filename: `p${i}.png`, content: await png() })));
    assert.equal((await upload(r.member, r.id, await images(10))).statusCode, 204);
    assert.equal((await upload(r.member, r.id, await images(10))).statusCode, 204);
    const res = await upload(r.member, r.id, await images(1));
    assert.equal(res.statusCode, 429);
    assert.equal(res.json().code, 'LIMIT_FILES_IN_PROCESSING');
    assert.equal(res.headers['retry-after'], '60');
    // With 20 in processing, nothing more is taken, not even a file that needs no processing.
    assert.equal((await upload(r.member, r.id, [{ filename: 'doc.pdf', content: Buffer.from('%PDF-1.4') }])).statusCode, 429, 'at the limit nothing is accepted');
  });
});

describe('a full processing queue', () => {
  it('gives 429 MEDIA_QUEUE_FULL', async () => {
    const t = await startTestApp({ MEDIA_QUEUE_MAX: '2' });
    try {
      const [owner, member] = await Promise.all([signIn(t), signIn(t)]);
      const roomId = (await makeRoom(t, owner, { members: [member] })).id;
      const body = multipart(await Promise.all([1, 2].map(async (i) => ({ filename: `${i}.png`, content: await png() }))));
      const first = await t.app.inject({ method: 'POST', url: `/api/messages/${roomId}/attachments`, headers: { ...bearer(owner.accessToken), ...body.headers }, payload: body.payload });
      assert.equal(first.statusCode, 204);
      const second = multipart([{ filename: '3.png', content: await png() }]);
      const res = await t.app.inject({ method: 'POST', url: `/api/messages/${roomId}/attachments`, headers: { ...bearer(member.accessToken), ...second.headers }, payload: second.payload });
      assert.equal(res.statusCode, 429);
      assert.equal(res.json().code, 'MEDIA_QUEUE_FULL');
    } finally {
      await t.close();
    }
  });
});
