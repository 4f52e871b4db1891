import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import sharp from 'sharp';
import { sniffContentType } from '../../src/attachments/content-sniffer.js';
import { contentDisposition } from '../../rest/downloads.js';
import { bearer, signIn, startTestApp, type Session, type TestApp } from '../helpers/app.js';
import { httpAs, makeRoom } from '../helpers/factories.js';
import { multipart, type FilePart } from '../helpers/multipart.js';

const HTML = Buffer.from('<!doctype html><title>x</title><script>document.title = "pwned"; fetch("/console")</script>');
const SVG = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" onload="document.title=\'pwned\'"><script>fetch("/console")</script></svg>');
const SANDBOX = /default-src 'none';.*sandbox/;

/**
 * What a member's file can do when opened: the served type comes from its bytes, only images, audio
 * and video are inline, everything is nosniff and sandboxed, names of any script download, and files
 * can live on an origin of their own.
 */
describe('files members send never act as pages', () => {
  let t: TestApp;
  let onMediaHost: TestApp;

  before(async () => {
    [t, onMediaHost] = await Promise.all([startTestApp(), startTestApp({ MEDIA_BASE_URL: 'https://media.example.com', PUBLIC_BASE_URL: 'https://chat.example.com' })]);
  });
  after(async () => {
    await Promise.all([t.close(), onMediaHost.close()]);
  });

  /** Uploads `file` as a member of a new room; the answer to its ticket link. */
  async function served(app: TestApp, file: FilePart, host?: string) {
    const [owner, member] = await Promise.all([signIn(app), signIn(app)]);
    const room = await makeRoom(app, owner, { members: [member] });
    const body = multipart([file], { payload: JSON.stringify({ roomId: room.id, message: 'see attached' }) });
    const uploaded = await app.app.inject({ method: 'POST', url: `/api/messages/${room.id}/attachments`, headers: { ...bearer(member.accessToken), ...body.headers }, payload: body.payload });
    assert.equal(uploaded.statusCode, 204, uploaded.body);
    const attachment = await app.db.collection('attachments').findOne({ roomId: room.id });
    const ticket = await httpAs(() => app)(owner as Session, 'POST', `/api/messages/${attachment!.messageId}/attachments/${attachment!._id}/ticket`);
    assert.equal(ticket.statusCode, 200, ticket.body);
    const url = new URL(ticket.json().url as string);
    const answer = await app.app.inject({ url: url.pathname, headers: host ? { host } : {} });
    return { answer, url, stored: attachment! };
  }

  it('HTML, SVG, and HTML named .jpg and declared text/html are downloads of octet-stream, nosniff, sandboxed', async () => {
    for (const file of [
      { filename: 'invoice.html', content: HTML, contentType: 'text/html' },
      { filename: 'logo.svg', content: SVG, contentType: 'image/svg+xml' },
      { filename: 'photo.jpg', content: HTML, contentType: 'text/html' },
    ]) {
      const { answer, stored } = await served(t, file);
      assert.equal(answer.statusCode, 200, file.filename);
      assert.equal(stored.contentType, 'application/octet-stream', `${file.filename}: stored as what its bytes are, not as declared`);
      assert.equal(answer.headers['content-type'], 'application/octet-stream', file.filename);
      assert.match(String(answer.headers['content-disposition']), /^attachment; /, file.filename);
      assert.equal(answer.headers['x-content-type-options'], 'nosniff');
      assert.match(String(answer.headers['content-security-policy']), SANDBOX);
    }
  });

  it('a real image declared as HTML is served inline as the image its bytes are, still sandboxed', async () => {
    const jpeg = await sharp({ create: { width: 8, height: 8, channels: 3, background: '#336699' } }).jpeg().toBuffer();
    const { answer, stored } = await served(t, { filename: 'cat.html', content: jpeg, contentType: 'text/html' });
    assert.equal(stored.contentType, 'image/jpeg');
    assert.equal(answer.headers['content-type'], 'image/jpeg');
    assert.match(String(answer.headers['content-disposition']), /^inline; /);
    assert.equal(answer.headers['x-content-type-options'], 'nosniff');
    assert.match(String(answer.headers['content-security-policy']), SANDBOX);
  });

  it('names in any script download with an ASCII fallback and filename* (RFC 6266, 8187); control characters are gone at upload', async () => {
    for (const [given, kept] of [
      ['Счёт за март.pdf', 'Счёт за март.pdf'],
      ['会议记录 2026.txt', '会议记录 2026.txt'],
      ['🎉 party (final).txt', '🎉 party (final).txt'],
      ['evil\u0000na\tme.txt', 'evilname.txt'],
      ['invoice\u202Etxt.exe', 'invoicetxt.exe'],
    ]) {
      const { answer, stored } = await served(t, { filename: given!, content: Buffer.from('%PDF-1.4 hello') });
      assert.equal(answer.statusCode, 200, `${given}: ${answer.body}`);
      assert.equal(stored.filename, kept, 'stored cleaned');
      const disposition = String(answer.headers['content-disposition']);
      assert.ok(/^[\x20-\x7e]+$/.test(disposition), `the header is ASCII: ${disposition}`);
      const star = /filename\*=UTF-8''([^;]+)/.exec(disposition)?.[1];
      assert.equal(decodeURIComponent(star!), kept, disposition);
      assert.match(disposition, /filename="[\x20-\x21\x23-\x5b\x5d-\x7e]*"/, 'the fallback has no quote or backslash inside');
    }
    assert.equal(contentDisposition('attachment', "it's (a) *test*.txt"), 'attachment; filename="it\'s (a) *test*.txt"; filename*=UTF-8\'\'it%27s%20%28a%29%20%2Atest%2A.txt');
  });

  it('with MEDIA_BASE_URL, ticket links point at the media host, and the same link on the service\'s own host is a 404', async () => {
    const { answer, url } = await served(onMediaHost, { filename: 'note.txt', content: Buffer.from('hello') }, 'media.example.com');
    assert.equal(url.origin, 'https://media.example.com');
    assert.equal(answer.statusCode, 200);
    const moved = await onMediaHost.app.inject({ url: url.pathname, headers: { host: 'chat.example.com' } });
    assert.equal(moved.statusCode, 404);
    assert.equal(moved.json().code, 'NOT_FOUND');
  });

  it('the sniffer knows the formats phones send and nothing else', () => {
    const at4 = (brand: string) => Buffer.concat([Buffer.from([0, 0, 0, 0x18]), Buffer.from(`ftyp${brand}`)]);
    const cases: [Buffer, string][] = [
      [Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), 'image/png'],
      [Buffer.from('GIF89a...'), 'image/gif'],
      [Buffer.from('RIFF\0\0\0\0WEBPVP8 '), 'image/webp'],
      [at4('heic'), 'image/heic'],
      [at4('isom'), 'video/mp4'],
      [at4('qt  '), 'video/quicktime'],
      [at4('M4A '), 'audio/mp4'],
      [Buffer.from('OggS\0'), 'audio/ogg'],
      [Buffer.from('ID3\x04'), 'audio/mpeg'],
      [Buffer.from([0xff, 0xf1, 0x50]), 'audio/aac'],
      [Buffer.from('%PDF-1.7'), 'application/pdf'],
      [HTML, 'application/octet-stream'],
      [SVG, 'application/octet-stream'],
      [Buffer.from('<?xml version="1.0"?><svg/>'), 'application/octet-stream'],
      [Buffer.alloc(0), 'application/octet-stream'],
    ];
    for (const [bytes, type] of cases) assert.equal(sniffContentType(bytes), type, bytes.toString('latin1', 0, 12));
  });
});
