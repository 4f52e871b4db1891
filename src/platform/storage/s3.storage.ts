import { createHash, createHmac } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { stat, unlink } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import type { BlobStorage } from './storage.js';

export interface S3Options {
  /** e.g. https://s3.eu-central-1.amazonaws.com, or a MinIO/R2/Ceph endpoint */
  endpoint: string;
  region: string;
  bucket: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** Bucket in the path (MinIO and most S3-compatible servers) rather than in the host name. */
  pathStyle: boolean;
}

const hmac = (key: Buffer | string, data: string) => createHmac('sha256', key).update(data).digest();
const sha256 = (data: string) => createHash('sha256').update(data).digest('hex');
const encodeKey = (key: string) => key.split('/').map(encodeURIComponent).join('/');

/**
 * AWS Signature Version 4 for S3: the request's headers plus `host`, `x-amz-date`,
 * `x-amz-content-sha256` and `authorization`. `payloadHash` is the body's SHA-256 in hex, or
 * UNSIGNED-PAYLOAD for streamed bodies.
 */
export function signV4(input: {
  method: string;
  url: URL;
  headers: Record<string, string>;
  payloadHash: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  now: Date;
}): Record<string, string> {
  const amzDate = input.now.toISOString().replace(/[:-]|\.\d{3}/g, '');
  const date = amzDate.slice(0, 8);
  const all: Record<string, string> = { ...input.headers, host: input.url.host, 'x-amz-date': amzDate, 'x-amz-content-sha256': input.payloadHash };
  const lower = Object.fromEntries(Object.entries(all).map(([name, value]) => [name.toLowerCase(), value.trim()]));
  const names = Object.keys(lower).sort();
  const canonical = [input.method, input.url.pathname, '', names.map((name) => `${name}:${lower[name]}\n`).join(''), names.join(';'), input.payloadHash].join('\n');
  const scope = `${date}/${input.region}/s3/aws4_request`;
  const toSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha256(canonical)].join('\n');
  const key = hmac(hmac(hmac(hmac(`AWS4${input.secretAccessKey}`, date), input.region), 's3'), 'aws4_request');
  const signature = createHmac('sha256', key).update(toSign).digest('hex');
  return { ...all, authorization: `AWS4-HMAC-SHA256 Credential=${input.accessKeyId}/${scope},SignedHeaders=${names.join(';')},Signature=${signature}` };
}

/**
 * An S3-compatible bucket over plain HTTP(S) with AWS Signature Version 4, no SDK. Uploads stream
 * from disk with an unsigned payload, so files are never held whole in memory.
 */
export class S3Storage implements BlobStorage {
  readonly name = 's3';

  constructor(private readonly options: S3Options) {}

  private url(key: string): URL {
    const base = new URL(this.options.endpoint);
    if (this.options.pathStyle) return new URL(`/${this.options.bucket}/${encodeKey(key)}`, base);
    return new URL(`/${encodeKey(key)}`, `${base.protocol}//${this.options.bucket}.${base.host}`);
  }

  private sign(method: string, url: URL, headers: Record<string, string>): Record<string, string> {
    return signV4({ method, url, headers, payloadHash: 'UNSIGNED-PAYLOAD', ...this.options, now: new Date() });
  }

  private async request(method: string, key: string, headers: Record<string, string> = {}, body?: Readable): Promise<Response> {
    const url = this.url(key);
    const init: RequestInit & { duplex?: 'half' } = { method, headers: this.sign(method, url, headers) };
    if (body) {
      // Cast: Node's web ReadableStream and the DOM's BodyInit are the same object with two type declarations.
      init.body = Readable.toWeb(body) as unknown as RequestInit['body'];
      init.duplex = 'half';
    }
    return fetch(url, init);
  }

  async putFile(key: string, path: string, contentType: string): Promise<void> {
    const { size } = await stat(path);
    const response = await this.request('PUT', key, { 'content-type': contentType, 'content-length': String(size) }, createReadStream(path));
    if (!response.ok) throw new Error(`S3 PUT ${key} answered ${response.status}: ${(await response.text()).slice(0, 200)}`);
    await unlink(path);
  }

  async read(key: string, range?: { start: number; end: number }): Promise<Readable> {
    const response = await this.request('GET', key, range ? { range: `bytes=${range.start}-${range.end}` } : {});
    if (!response.ok || !response.body) throw new Error(`S3 GET ${key} answered ${response.status}`);
    // Cast: as above, the other way.
    return Readable.fromWeb(response.body as unknown as WebReadableStream);
  }

  async size(key: string): Promise<number | null> {
    const response = await this.request('HEAD', key);
    if (response.status === 404) return null;
    if (!response.ok) throw new Error(`S3 HEAD ${key} answered ${response.status}`);
    return Number(response.headers.get('content-length'));
  }

  async download(key: string, path: string): Promise<void> {
    await pipeline(await this.read(key), createWriteStream(path));
  }

  async delete(key: string): Promise<void> {
    const response = await this.request('DELETE', key);
    if (!response.ok && response.status !== 404) throw new Error(`S3 DELETE ${key} answered ${response.status}`);
  }
}
