import type { z } from 'zod';
import { createHash, randomUUID } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { buffer } from 'node:stream/consumers';
import { parsePublicKey, verifySignature } from '../devices/index.js';
import type { Clock } from '../platform/clock.js';
import { isX25519PublicKey } from '../platform/public-keys.js';
import type { Logger } from '../platform/logger.js';
import { isDuplicateKey } from '../platform/mongo.js';
import type { Principal } from '../platform/principal.js';
import type { BlobStorage } from '../platform/storage/storage.js';
import { E2eeErrors } from './e2ee.errors.js';
import type { E2eeRepo, IdentityDoc } from './e2ee.repo.js';
import { KDF_PARAMS_MAX_BYTES, type E2eeBackupDtoSchema, type E2eeBackupRequestSchema, type E2eeIdentitySchema } from './e2ee.schemas.js';

export type IdentityInput = z.infer<typeof E2eeIdentitySchema>;
export type BackupInput = z.infer<typeof E2eeBackupRequestSchema>;
export type BackupView = z.infer<typeof E2eeBackupDtoSchema>;

/** What a device signs to register its identity (docs/clients/e2ee.md). */
export const identitySigned = (deviceId: string, encryptionKey: string, signingKey: string) => `E2EE_IDENTITY_V1|${deviceId}|${encryptionKey}|${signingKey}`;

/**
 * The key directory's per-device and per-user records: a device's identity keys (registered once,
 * checked with its proof), and a user's key backup (opaque: stored and returned byte for byte, to its
 * owner only; the ciphertext in blob storage, since it may be larger than a database document).
 */
export class KeyDirectoryService {
  constructor(
    private readonly deps: {
      repo: E2eeRepo;
      storage: () => BlobStorage;
      stagingDir: string;
      /** Called once a device's identity is stored: rooms are told (RoomKeysService). */
      onIdentity: (identity: IdentityDoc) => Promise<void>;
      clock: Clock;
      logger: Logger;
    },
  ) {}

  async registerIdentity(principal: Principal, input: IdentityInput): Promise<void> {
    const signing = Buffer.from(input.signingKey, 'base64').length === 32 ? parsePublicKey(input.signingKey, 'ED25519') : null;
    if (!signing || !isX25519PublicKey(input.encryptionKey)) throw E2eeErrors.IDENTITY_INVALID();
    const proofOk = verifySignature(signing.key, 'ED25519', Buffer.from(identitySigned(principal.deviceId, input.encryptionKey, input.signingKey)), input.proof);
    if (!proofOk || Buffer.from(input.proof, 'base64').length !== 64) throw E2eeErrors.IDENTITY_PROOF_INVALID();
    const identity: IdentityDoc = {
      _id: principal.deviceId,
      userId: principal.userId,
      encryptionKey: input.encryptionKey,
      signingKey: input.signingKey,
      proof: input.proof,
      revoked: false,
      createdAt: this.deps.clock(),
    };
    try {
      await this.deps.repo.insertIdentity(identity);
    } catch (error) {
      if (isDuplicateKey(error)) throw E2eeErrors.IDENTITY_EXISTS();
      throw error;
    }
    await this.deps.onIdentity(identity);
  }

  /** The identity of a device that may receive room keys (registered, not signed out), or null. */
  async eligibleIdentity(deviceId: string): Promise<IdentityDoc | null> {
    const identity = await this.deps.repo.findIdentity(deviceId);
    return identity && !identity.revoked ? identity : null;
  }

  async backup(principal: Principal): Promise<BackupView | null> {
    const doc = await this.deps.repo.findBackup(principal.userId);
    if (!doc) return null;
    const ciphertext = (await buffer(await this.deps.storage().read(doc.blobKey))).toString('latin1');
    // Cast: stored as JSON.stringify of the object the client sent (checked then).
    return { version: doc.version, kdf: doc.kdf, kdfParams: JSON.parse(doc.kdfParams) as Record<string, unknown>, ciphertext, etag: doc.etag, updatedAt: doc.updatedAt.toISOString() };
  }

  /**
   * Stores a backup whose version exceeds the stored one (else 409 naming it). The ciphertext goes to
   * blob storage under a key of its own first; one conditional write of the record then decides, and
   * the loser's (or the replaced) blob is deleted.
   */
  async putBackup(principal: Principal, input: BackupInput): Promise<void> {
    const kdfParams = JSON.stringify(input.kdfParams);
    if (Buffer.byteLength(kdfParams) > KDF_PARAMS_MAX_BYTES) throw E2eeErrors.BACKUP_INVALID({ message: `kdfParams may have at most ${KDF_PARAMS_MAX_BYTES} bytes of JSON` });
    const { repo } = this.deps;
    const stored = await repo.backupVersion(principal.userId);
    if (stored !== null && stored >= input.version) throw this.versionConflict(stored);

    const blobKey = `e2ee-backups/${principal.userId}/${input.version}-${randomUUID()}`;
    await mkdir(this.deps.stagingDir, { recursive: true });
    const staged = path.join(this.deps.stagingDir, `backup-${randomUUID()}`);
    await writeFile(staged, input.ciphertext, 'latin1');
    await this.deps.storage().putFile(blobKey, staged, 'application/octet-stream');
    const etag = createHash('sha256').update(`${input.version}|`).update(input.ciphertext).digest('base64url').slice(0, 27);
    const record = { version: input.version, kdf: input.kdf, kdfParams, blobKey, size: input.ciphertext.length, etag, updatedAt: this.deps.clock() };
    let before;
    try {
      before = await repo.replaceBackupIfNewer(principal.userId, record);
    } catch (error) {
      await this.deps.storage().delete(blobKey);
      if (!isDuplicateKey(error)) throw error;
      // Another upload with a version at least as high came in between.
      throw this.versionConflict((await repo.backupVersion(principal.userId)) ?? input.version);
    }
    if (before) await this.deps.storage().delete(before.blobKey).catch((error: unknown) => this.deps.logger.warn({ err: error }, 'an old key backup blob stayed'));
  }

  async deleteBackup(principal: Principal): Promise<void> {
    const removed = await this.deps.repo.deleteBackup(principal.userId);
    if (removed) await this.deps.storage().delete(removed.blobKey).catch((error: unknown) => this.deps.logger.warn({ err: error }, 'a deleted key backup blob stayed'));
  }

  private versionConflict(storedVersion: number) {
    return E2eeErrors.BACKUP_VERSION_CONFLICT({ message: `The stored backup has version ${storedVersion}; upload a higher one`, details: [{ storedVersion }] });
  }
}
