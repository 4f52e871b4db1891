import { createPublicKey } from 'node:crypto';

const X25519_SPKI_PREFIX = Buffer.from('302a300506032b656e032100', 'hex');

/** True for standard base64 of exactly 32 bytes that node:crypto takes as an X25519 public key. */
export function isX25519PublicKey(base64: string): boolean {
  const bytes = Buffer.from(base64, 'base64');
  if (bytes.length !== 32 || bytes.toString('base64') !== base64.padEnd(Math.ceil(base64.length / 4) * 4, '=')) return false;
  try {
    return createPublicKey({ key: Buffer.concat([X25519_SPKI_PREFIX, bytes]), format: 'der', type: 'spki' }).asymmetricKeyType === 'x25519';
  } catch {
    return false;
  }
}
