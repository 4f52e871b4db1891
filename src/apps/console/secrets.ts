import { createCipheriv, createDecipheriv, createHash, createHmac, randomBytes, timingSafeEqual, type KeyObject } from 'node:crypto';

/** A fresh secret with its prefix: `whsec_`, `bbt_<id>_`, `bpk_<id>_` followed by 32 random bytes, base64url. */
export const newSecret = (prefix: string) => `${prefix}${randomBytes(32).toString('base64url')}`;

/** Encrypts a secret for storage (AES-256-GCM under the configured key): base64 of nonce, ciphertext and tag. */
export function sealSecret(key: Buffer, secret: string): string {
  const nonce = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, nonce);
  const body = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
  return Buffer.concat([nonce, body, cipher.getAuthTag()]).toString('base64');
}

export function openSecret(key: Buffer, sealed: string): string {
  const bytes = Buffer.from(sealed, 'base64');
  const decipher = createDecipheriv('aes-256-gcm', key, bytes.subarray(0, 12));
  decipher.setAuthTag(bytes.subarray(-16));
  return Buffer.concat([decipher.update(bytes.subarray(12, -16)), decipher.final()]).toString('utf8');
}

/** What a token is stored as: its SHA-256, hex. */
export const tokenHash = (token: string) => createHash('sha256').update(token).digest('hex');

/** Compares a presented token with a stored hash in constant time. */
export function tokenMatches(presented: string, storedHash: string): boolean {
  const a = Buffer.from(tokenHash(presented), 'hex');
  const b = Buffer.from(storedHash, 'hex');
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * The `X-Service-Signature` value (spec, "Authentication", 4 and 5): `v1=<hex HMAC-SHA256>` over
 * `<timestamp>.<raw body>` with each secret in force (the whole secret, prefix included, is the key),
 * newest first, comma-separated.
 */
export function signatureHeader(secrets: KeyObject[], timestamp: number, body: Buffer): string {
  return secrets.map((secret) => `v1=${createHmac('sha256', secret).update(`${timestamp}.`).update(body).digest('hex')}`).join(',');
}
