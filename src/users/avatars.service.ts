import { randomBytes, timingSafeEqual } from 'node:crypto';
import { rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import sharp from 'sharp';
import type { Clock } from '../platform/clock.js';
import type { Principal } from '../platform/principal.js';
import type { BlobStorage } from '../platform/storage/storage.js';
import { CommonErrors } from '../platform/common.errors.js';
import { UsersErrors } from './users.errors.js';
import type { AvatarRef, UserDoc, UsersRepo } from './users.repo.js';
import { must } from '../platform/must.js';

/** The two sizes made of every picture: square, cropped to the middle, WebP. */
export const AVATAR_SIZES = [512, 128] as const;
export type AvatarSize = (typeof AVATAR_SIZES)[number];
/** Decoding stops past this many pixels (a small file can claim a huge picture). */
export const AVATAR_MAX_PIXELS = 40_000_000;
const RASTER_FORMATS = new Set(['jpeg', 'png', 'webp', 'gif', 'heif', 'avif', 'tiff']);
/** The version in a picture's address: 128 random bits, so an address cannot be guessed from a user id. */
export const AVATAR_VERSION = /^[A-Za-z0-9_-]{22}$/;

const keyOf = (userId: string, version: string, size: AvatarSize) => `avatars/${userId}/${version}/${size}.webp`;

/** The public addresses of a user's picture, or nulls. */
export function avatarUrls(baseUrl: string, user: Pick<UserDoc, '_id' | 'avatar'> | undefined | null): { avatarUrl: string | null; avatarThumbnailUrl: string | null } {
  const version = user?.avatar?.version;
  if (!user || !version) return { avatarUrl: null, avatarThumbnailUrl: null };
  const at = (size: AvatarSize) => `${baseUrl}/avatars/${user._id}/${version}/${size}.webp`;
  return { avatarUrl: at(512), avatarThumbnailUrl: at(128) };
}

/**
 * Profile pictures. The upload is decoded and re-encoded by sharp (which also drops its metadata:
 * no location from a phone's camera leaves here) into two square WebP sizes, stored under a new random
 * version; the user's record then points at it, and the files of the picture it replaces are removed.
 * Pictures are served without the Authorization header from an address that names the user and the
 * version: it opens that picture while it is current, and nothing else.
 */
export class AvatarsService {
  constructor(
    private readonly deps: {
      users: UsersRepo;
      storage: () => BlobStorage;
      stagingDir: string;
      clock: Clock;
    },
  ) {}

  async set(principal: Principal, upload: Buffer | null): Promise<UserDoc> {
    if (!upload || upload.length === 0) throw UsersErrors.AVATAR_MISSING();
    const sizes = await this.render(upload);
    const version = randomBytes(16).toString('base64url');
    const storage = this.deps.storage();
    await Promise.all(
      AVATAR_SIZES.map(async (size) => {
        const staged = path.join(this.deps.stagingDir, `avatar-${version}-${size}.webp`);
        await writeFile(staged, sizes[size]);
        try {
          await storage.putFile(keyOf(principal.userId, version, size), staged, 'image/webp');
        } finally {
          await rm(staged, { force: true });
        }
      }),
    );
    const before = await this.deps.users.setAvatar(principal.userId, { version, updatedAt: this.deps.clock() });
    if (!before) {
      await this.removeFiles(principal.userId, { version, updatedAt: new Date() });
      throw CommonErrors.UNAUTHORIZED();
    }
    if (before.avatar) await this.removeFiles(principal.userId, before.avatar);
    return must(await this.deps.users.findById(principal.userId), 'the signed-in user');
  }

  async remove(principal: Principal): Promise<void> {
    const before = await this.deps.users.setAvatar(principal.userId, null);
    if (before?.avatar) await this.removeFiles(principal.userId, before.avatar);
  }

  /** The picture at a public address, while that version is the user's current one. */
  async open(userId: string, version: string, size: AvatarSize): Promise<Readable> {
    const user = AVATAR_VERSION.test(version) ? await this.deps.users.findById(userId) : null;
    const current = user?.avatar?.version;
    if (!current || current.length !== version.length || !timingSafeEqual(Buffer.from(current), Buffer.from(version))) throw UsersErrors.AVATAR_NOT_FOUND();
    try {
      return await this.deps.storage().read(keyOf(userId, current, size));
    } catch {
      // Replaced or removed between the two reads.
      throw UsersErrors.AVATAR_NOT_FOUND();
    }
  }

  private async render(upload: Buffer): Promise<Record<AvatarSize, Buffer>> {
    let format: string | undefined;
    let pixels: number;
    try {
      const meta = await sharp(upload, { limitInputPixels: false }).metadata();
      format = meta.format;
      pixels = (meta.width ?? 0) * (meta.height ?? 0);
    } catch {
      throw UsersErrors.AVATAR_NOT_AN_IMAGE();
    }
    if (!format || !RASTER_FORMATS.has(format)) throw UsersErrors.AVATAR_NOT_AN_IMAGE();
    if (pixels > AVATAR_MAX_PIXELS) throw UsersErrors.AVATAR_TOO_MANY_PIXELS();
    try {
      const [large, small] = await Promise.all(
        AVATAR_SIZES.map((side) =>
          sharp(upload, { failOn: 'error', limitInputPixels: AVATAR_MAX_PIXELS }).rotate().resize(side, side, { fit: 'cover' }).webp({ quality: 82 }).toBuffer(),
        ),
      );
      return { 512: must(large, 'the large picture'), 128: must(small, 'the small picture') };
    } catch {
      throw UsersErrors.AVATAR_NOT_AN_IMAGE({ message: 'The picture could not be decoded' });
    }
  }

  private async removeFiles(userId: string, avatar: AvatarRef): Promise<void> {
    const storage = this.deps.storage();
    await Promise.all(AVATAR_SIZES.map((size) => storage.delete(keyOf(userId, avatar.version, size)).catch(() => undefined)));
  }

  /** A deleted account's picture removed, its files with it. */
  async removeOf(userId: string): Promise<void> {
    const before = await this.deps.users.setAvatar(userId, null);
    if (before?.avatar) await this.removeFiles(userId, before.avatar);
  }
}
