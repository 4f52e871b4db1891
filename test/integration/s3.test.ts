import assert from 'node:assert/strict';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { text } from 'node:stream/consumers';
import { after, before, describe, it } from 'node:test';
import { S3Storage, signV4 } from '../../src/platform/storage/s3.storage.js';
import { bearer, signIn, startTestApp } from '../helpers/app.js';
import { makeRoom } from '../helpers/factories.js';
import { multipart } from '../helpers/multipart.js';
import { freePort } from '../helpers/ports.js';

interface S3rverInstance {
  run(): Promise<unknown>;
  close(): Promise<void>;
}
type S3rverClass = new (options: Record<string, unknown>) => S3rverInstance;

/** s3rver: a local S3 server speaking the S3 REST protocol (it accepts any well-formed V4 signature). */
describe('S3-compatible storage against a local S3 server', () => {
  let server: S3rverInstance;
  let endpoint: string;
  const options = () => ({ endpoint, region: 'us-east-1', bucket: 'chat-test', accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER', pathStyle: true });

  before(async () => {
    const S3rver = createRequire(import.meta.url)('s3rver') as S3rverClass;
    const port = await freePort();
    server = new S3rver({ port, address: '127.0.0.1', silent: true, directory: await mkdtemp(path.join(os.tmpdir(), 's3rver-')), configureBuckets: [{ name: 'chat-test' }] });
    await server.run();
    endpoint = `http://127.0.0.1:${port}`;
  });
  after(() => server.close());

  async function tempFile(content: string): Promise<string> {
    const file = path.join(os.tmpdir(), `s3-${Date.now()}-${Math.random().toString(36).slice(2)}`);
    await writeFile(file, content);
    return file;
  }

  it('stores, sizes, reads (also by range), downloads and deletes with signed requests', async () => {
    const storage = new S3Storage(options());
    await storage.putFile('rooms/r1/a1/original.txt', await tempFile('hello from s3 storage'), 'text/plain');
    assert.equal(await storage.size('rooms/r1/a1/original.txt'), 21);
    assert.equal(await text(await storage.read('rooms/r1/a1/original.txt')), 'hello from s3 storage');
    assert.equal(await text(await storage.read('rooms/r1/a1/original.txt', { start: 6, end: 9 })), 'from');
    const target = path.join(os.tmpdir(), `s3-download-${Date.now()}`);
    await storage.download('rooms/r1/a1/original.txt', target);
    assert.equal(await readFile(target, 'utf8'), 'hello from s3 storage');
    await storage.delete('rooms/r1/a1/original.txt');
    assert.equal(await storage.size('rooms/r1/a1/original.txt'), null);
  });

  it('signs exactly as AWS\'s published Signature V4 example (GET Object) does', () => {
    // s3rver accepts any well-formed V4 signature, so the signer is checked against AWS's own worked
    // example: the GET /test.txt request with Range bytes=0-9 of the S3 Signature V4 documentation.
    const signed = signV4({
      method: 'GET',
      url: new URL('https://examplebucket.s3.amazonaws.com/test.txt'),
      headers: { range: 'bytes=0-9' },
      payloadHash: 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
      region: 'us-east-1',
      accessKeyId: 'AKIAIOSFODNN7EXAMPLE',
      secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
      now: new Date('2013-05-24T00:00:00Z'),
    });
    assert.equal(
      signed.authorization,
      'AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41',
    );
  });

  it('the upload path end to end: attachments stored in the bucket and served by a ticket', async () => {
    const t = await startTestApp({
      STORAGE_PROVIDER: 's3',
      S3_ENDPOINT: endpoint,
      S3_BUCKET: 'chat-test',
      S3_ACCESS_KEY_ID: 'S3RVER',
      S3_SECRET_ACCESS_KEY: 'S3RVER',
    });
    try {
      const s = await signIn(t);
      const roomId = (await makeRoom(t, s)).id;
      const body = multipart([{ filename: 'notes.txt', content: Buffer.from('kept in the bucket') }]);
      assert.equal((await t.app.inject({ method: 'POST', url: `/api/messages/${roomId}/attachments`, headers: { ...bearer(s.accessToken), ...body.headers }, payload: body.payload })).statusCode, 204);
      const attachment = (await t.app.inject({ url: `/api/messages/${roomId}/attachments`, headers: bearer(s.accessToken) })).json().items[0];
      assert.equal(await new S3Storage(options()).size((await t.ctx.repos.attachments.findById(attachment.id))!.storageKey), 18);
      const { url } = (await t.app.inject({ method: 'POST', url: `/api/messages/${attachment.messageId}/attachments/${attachment.id}/ticket`, headers: bearer(s.accessToken) })).json();
      const opened = await t.app.inject({ url: new URL(url).pathname });
      assert.equal(opened.payload, 'kept in the bucket');
    } finally {
      await t.close();
    }
  });
});
