import { z } from 'zod';
import { IsoDateTime } from '../platform/common.schemas.js';

/** Standard base64 (padding optional): what the keys, shares and ciphertexts travel as. */
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const base64 = (max: number) => z.string().min(1).max(max).regex(BASE64, 'base64');

export const KDF_NAMES = ['argon2id', 'scrypt', 'pbkdf2-sha256'] as const;
/** A backup's ciphertext: base64 of at most 16 MiB (docs/clients/e2ee.md). */
export const BACKUP_CIPHERTEXT_MAX = 16 * 1024 * 1024;
export const KDF_PARAMS_MAX_BYTES = 1024;
/** Shares of one upload: a room of 1,000 members with 3 devices each fits with room to spare. */
export const MAX_SHARES_PER_UPLOAD = 5000;

export const E2eeIdentitySchema = z
  .object({
    encryptionKey: base64(64).describe('Base64 of the 32-byte X25519 public key room keys are wrapped to'),
    signingKey: base64(64).describe('Base64 of the 32-byte Ed25519 public key that signs this device\'s shares'),
    proof: base64(128).describe('Ed25519 signature by signingKey over E2EE_IDENTITY_V1|<deviceId>|<encryptionKey>|<signingKey>'),
  })
  .strict()
  .meta({ id: 'E2eeIdentityRequest' });

export const E2eeBackupRequestSchema = z
  .object({
    version: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER).describe('Must exceed the stored backup\'s version'),
    kdf: z.enum(KDF_NAMES).describe('How the backup key is derived from the user\'s passphrase'),
    kdfParams: z.record(z.string(), z.unknown()).describe(`The derivation's parameters (salt, cost): a JSON object of at most ${KDF_PARAMS_MAX_BYTES} bytes`),
    ciphertext: base64(BACKUP_CIPHERTEXT_MAX).describe('Base64 of the encrypted backup, at most 16 MiB of text; returned exactly as uploaded'),
  })
  .strict()
  .meta({ id: 'E2eeKeyBackupRequest' });

export const E2eeBackupDtoSchema = z
  .object({
    version: z.number().int(),
    kdf: z.enum(KDF_NAMES),
    kdfParams: z.record(z.string(), z.unknown()),
    ciphertext: z.string(),
    etag: z.string().describe('Changes with every upload (also sent as the ETag header): a device that kept it sees that another device replaced the backup'),
    updatedAt: IsoDateTime,
  })
  .meta({ id: 'E2eeKeyBackupDto' });

export const E2eeShareSchema = z
  .object({
    deviceId: z.string().min(1).max(64).describe('The device this copy is wrapped to'),
    wrappedKey: base64(1024).describe('The room key wrapped to that device\'s encryption key'),
    signature: base64(128).describe('Ed25519 signature by the uploading device over E2EE_SHARE_V1|<roomId>|<version>|<deviceId>|<wrappedKey>'),
  })
  .strict()
  .meta({ id: 'E2eeKeyShare' });

export const E2eeShareUploadSchema = z
  .object({
    version: z.number().int().min(1).max(1_000_000).describe('With create: the current version plus one; without: an existing version'),
    create: z.boolean().default(false).describe('Make the next version (first key or rotation): it must carry a share for every eligible device'),
    shares: z.array(E2eeShareSchema).min(1).max(MAX_SHARES_PER_UPLOAD),
  })
  .strict()
  .meta({ id: 'E2eeKeyShareUploadRequest' });

export const E2eeStoredShareSchema = z
  .object({
    version: z.number().int(),
    wrappedKey: z.string(),
    fromDeviceId: z.string(),
    fromSigningKey: z.string().describe('The producing device\'s Ed25519 key (base64), to verify the signature with'),
    signature: z.string(),
    createdAt: IsoDateTime,
  })
  .meta({ id: 'E2eeStoredKeyShare' });

export const E2eeSharesDtoSchema = z
  .object({
    roomId: z.string(),
    currentVersion: z.number().int().describe('0 before the first key'),
    rotationDue: z.boolean().describe('A member left, or a device was signed out or got its identity, since the current version was made: the next sender should make a new one'),
    shares: z.array(E2eeStoredShareSchema).describe('The calling device\'s copies, one per version it has, oldest first'),
  })
  .meta({ id: 'E2eeKeySharesDto' });

export const E2eeKeyRequestSchema = z
  .object({ version: z.number().int().min(1).max(1_000_000).describe('A key version the calling device lacks') })
  .strict()
  .meta({ id: 'E2eeKeyRequest' });

export const E2eeAttachmentUploadedSchema = z
  .object({ attachmentId: z.string(), size: z.number().int().describe('Bytes stored: the blob and the thumbnail') })
  .meta({ id: 'E2eeAttachmentUploadedDto' });
