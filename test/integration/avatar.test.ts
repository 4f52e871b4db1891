import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import sharp from 'sharp';
import { bearer, startTestApp, type Session, type TestApp } from '../helpers/app.js';
import { httpAs, makeUser } from '../helpers/factories.js';
import { multipart, type FilePart } from '../helpers/multipart.js';

const MAX_BYTES = 200_000;

/** A photo-like picture with a camera location in its metadata. */
async function photo(width = 1200, height = 800): Promise<Buffer> {
  return sharp({ create: { width, height, channels: 3, background: { r: 200, g: 40, b: 90 } } })
    .jpeg()
    .withExif({ IFD0: { Make: 'PhoneMaker', Copyright: 'secret-location-52.52N-13.40E' } })
    .toBuffer();
}

describe('profile pictures', () => {
  let t: TestApp;
  let me: Session;
  let other: Session;
  const api = httpAs(() => t);
  before(async () => {
    t = await startTestApp({ AVATAR_MAX_BYTES: String(MAX_BYTES) });
    [me, other] = await Promise.all([makeUser(t), makeUser(t)]);
  });
  after(() => t.close());

  const upload = (s: Session, files: FilePart[], fields: Record<string, string> = {}) => {
    const body = multipart(files, fields);
    return t.app.inject({ method: 'PUT', url: '/api/users/me/avatar', headers: { ...bearer(s.accessToken), ...body.headers }, payload: body.payload });
  };
  /** Opens a picture address the way an image tag does: no Authorization header. */
  const open = (url: string) => t.app.inject({ method: 'GET', url: new URL(url).pathname });
  const myUrls = async (s: Session) => {
    const user = (await api(s, 'GET', '/api/users/me')).json();
    return { avatarUrl: user.avatarUrl as string | null, avatarThumbnailUrl: user.avatarThumbnailUrl as string | null };
  };

  it('stores two square WebP sizes without the metadata, open to an image tag and shown to others', async () => {
    const res = await upload(me, [{ filename: 'me.jpg', content: await photo(), contentType: 'image/jpeg' }]);
    assert.equal(res.statusCode, 200, res.body);
    const { avatarUrl, avatarThumbnailUrl } = res.json();
    assert.match(avatarUrl, /^http:\/\/.+\/avatars\/[^/]+\/[A-Za-z0-9_-]{22}\/512\.webp$/);

    for (const [url, side] of [[avatarUrl, 512], [avatarThumbnailUrl, 128]] as const) {
      const file = await open(url);
      assert.equal(file.statusCode, 200);
      assert.equal(file.headers['content-type'], 'image/webp');
      assert.equal(file.headers['x-content-type-options'], 'nosniff');
      assert.match(String(file.headers['cache-control']), /immutable/);
      const meta = await sharp(file.rawPayload).metadata();
      assert.deepEqual([meta.format, meta.width, meta.height], ['webp', side, side]);
      assert.equal(meta.exif, undefined, 'the camera metadata is gone');
      assert.ok(!file.rawPayload.includes('secret-location'));
    }
    const seen = await api(other, 'GET', `/api/users/${me.userId}`);
    assert.equal(seen.json().avatarUrl, avatarUrl);
    assert.equal(seen.json().avatarThumbnailUrl, avatarThumbnailUrl);
  });

  it('opens nothing but the current picture', async () => {
    const { avatarUrl } = await myUrls(me);
    assert.ok(avatarUrl);
    const version = avatarUrl.split('/').at(-2)!;
    const base = new URL(avatarUrl).origin;
    const guesses = [
      `/avatars/${me.userId}/${'A'.repeat(22)}/512.webp`,
      `/avatars/${other.userId}/${version}/512.webp`,
      `/avatars/${me.userId}/${version}/1024.webp`,
      `/avatars/${me.userId}/${version}/..%2F..%2Fattachments`,
      `/avatars/${me.userId}/..%2F${version}/512.webp`,
    ];
    for (const guess of guesses) {
      const res = await open(`${base}${guess}`);
      assert.ok([400, 404].includes(res.statusCode), `${guess}: ${res.statusCode}`);
      assert.notEqual(res.headers['content-type'], 'image/webp');
    }
  });

  it('replacing it retires the old addresses; a refused upload changes nothing', async () => {
    const before_ = await myUrls(me);
    const replaced = await upload(me, [{ filename: 'new.png', content: await sharp({ create: { width: 300, height: 600, channels: 4, background: '#00ff0080' } }).png().toBuffer() }]);
    assert.equal(replaced.statusCode, 200, replaced.body);
    const after_ = replaced.json();
    assert.notEqual(after_.avatarUrl, before_.avatarUrl);
    assert.equal((await open(before_.avatarUrl!)).statusCode, 404);
    assert.equal((await open(before_.avatarThumbnailUrl!)).statusCode, 404);
    assert.equal((await open(after_.avatarUrl)).statusCode, 200);

    for (const [content, code] of [
      [Buffer.from('not a picture at all'), 'AVATAR_NOT_AN_IMAGE'],
      [Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10"/></svg>'), 'AVATAR_NOT_AN_IMAGE'],
      [(await photo()).subarray(0, 2000), 'AVATAR_NOT_AN_IMAGE'],
    ] as const) {
      const res = await upload(me, [{ filename: 'x.jpg', content }]);
      assert.equal(res.statusCode, 400, res.body);
      assert.equal(res.json().code, code);
    }
    const missing = await upload(me, []);
    assert.equal(missing.statusCode, 400);
    assert.equal(missing.json().code, 'AVATAR_MISSING');
    const two = await upload(me, [{ filename: 'a.png', content: await photo(10, 10) }, { filename: 'b.png', content: await photo(10, 10) }]);
    assert.equal(two.statusCode, 400, two.body);
    assert.equal(two.json().code, 'LIMIT_FILES_PER_UPLOAD');
    assert.deepEqual(await myUrls(me), { avatarUrl: after_.avatarUrl, avatarThumbnailUrl: after_.avatarThumbnailUrl });
  });

  it('takes a file of exactly the size limit and refuses one byte more', async () => {
    const picture = await photo(64, 64);
    // Bytes after a JPEG's end-of-image marker are ignored by decoders: padding reaches an exact size.
    const exactly = Buffer.concat([picture, Buffer.alloc(MAX_BYTES - picture.length)]);
    const fits = await upload(other, [{ filename: 'fits.jpg', content: exactly }]);
    assert.equal(fits.statusCode, 200, fits.body);
    const over = await upload(other, [{ filename: 'over.jpg', content: Buffer.concat([exactly, Buffer.alloc(1)]) }]);
    assert.equal(over.statusCode, 413, over.body);
    assert.equal(over.json().code, 'AVATAR_TOO_LARGE');
    assert.equal((await myUrls(other)).avatarUrl, fits.json().avatarUrl);
  });

  it('refuses pictures of more than 40 megapixels before decoding them', async () => {
    const huge = await sharp({ create: { width: 8000, height: 5001, channels: 3, background: '#000000' } }).png({ compressionLevel: 9 }).toBuffer();
    assert.ok(huge.length < MAX_BYTES, `a uniform picture compresses small (${huge.length} bytes)`);
    const res = await upload(me, [{ filename: 'huge.png', content: huge }]);
    assert.equal(res.statusCode, 400, res.body);
    assert.equal(res.json().code, 'AVATAR_TOO_MANY_PIXELS');
  });

  it('removing it retires its addresses', async () => {
    const { avatarUrl } = await myUrls(me);
    assert.equal((await api(me, 'DELETE', '/api/users/me/avatar')).statusCode, 204);
    assert.equal((await open(avatarUrl!)).statusCode, 404);
    assert.deepEqual(await myUrls(me), { avatarUrl: null, avatarThumbnailUrl: null });
    assert.equal((await api(other, 'GET', `/api/users/${me.userId}`)).json().avatarUrl, null);
    assert.equal((await api(me, 'DELETE', '/api/users/me/avatar')).statusCode, 204, 'removing none is fine');
  });
});
