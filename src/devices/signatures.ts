import { createPublicKey, verify, type KeyObject } from 'node:crypto';

export const BIOMETRIC_ALGORITHMS = ['ECDSA_P256', 'ED25519'] as const;
export type BiometricAlgorithm = (typeof BIOMETRIC_ALGORITHMS)[number];

// DER prefixes that turn a raw public key into SubjectPublicKeyInfo.
const P256_SPKI_PREFIX = Buffer.from('3059301306072a8648ce3d020106082a8648ce3d030107034200', 'hex');
const ED25519_SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');

/**
 * Reads a device public key given as base64 of SubjectPublicKeyInfo DER (Android Keystore, WebCrypto),
 * or of the raw key: the 65-byte uncompressed P-256 point iOS's SecKeyCopyExternalRepresentation
 * gives, or the 32-byte Ed25519 key. Null when it is not a key of the named kind.
 */
export function parsePublicKey(base64: string, algorithm: BiometricAlgorithm): { key: KeyObject; spki: string } | null {
  let bytes = Buffer.from(base64, 'base64');
  if (bytes.length === 0 || bytes.toString('base64').replace(/=+$/, '') !== base64.replace(/=+$/, '').replace(/-/g, '+').replace(/_/g, '/')) {
    return null;
  }
  if (algorithm === 'ECDSA_P256' && bytes.length === 65 && bytes[0] === 0x04) bytes = Buffer.concat([P256_SPKI_PREFIX, bytes]);
  if (algorithm === 'ED25519' && bytes.length === 32) bytes = Buffer.concat([ED25519_SPKI_PREFIX, bytes]);
  try {
    const key = createPublicKey({ key: bytes, format: 'der', type: 'spki' });
    const ok =
      algorithm === 'ECDSA_P256'
        ? key.asymmetricKeyType === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1'
        : key.asymmetricKeyType === 'ed25519';
    return ok ? { key, spki: key.export({ format: 'der', type: 'spki' }).toString('base64') } : null;
  } catch {
    return null;
  }
}

/**
 * Verifies a signature over `message`: ECDSA P-256 with SHA-256 (DER-encoded, as secure enclaves and
 * Android Keystore give it, or the 64-byte r||s form of WebCrypto), or Ed25519.
 */
export function verifySignature(key: KeyObject, algorithm: BiometricAlgorithm, message: Buffer, signatureBase64: string): boolean {
  const signature = Buffer.from(signatureBase64, 'base64');
  if (signature.length === 0 || signature.length > 256) return false;
  try {
    if (algorithm === 'ED25519') return verify(null, message, key, signature);
    const dsaEncoding = signature.length === 64 ? 'ieee-p1363' : 'der';
    return verify('sha256', message, { key, dsaEncoding }, signature);
  } catch {
    return false;
  }
}
