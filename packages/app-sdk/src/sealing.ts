import { createDecipheriv, createPrivateKey, createPublicKey, diffieHellman, hkdfSync, type KeyObject } from 'node:crypto';

const X25519_SPKI = Buffer.from('302a300506032b656e032100', 'hex');
const X25519_PKCS8 = Buffer.from('302e020100300506032b656e04220420', 'hex');

/** The app's sealing key from its 32 private bytes (base64); publish `publicKey` as the manifest's sealing.publicKey. */
export function sealingKeyFrom(privateBase64: string): { privateKey: KeyObject; publicKey: string } {
  const privateKey = createPrivateKey({ key: Buffer.concat([X25519_PKCS8, Buffer.from(privateBase64, 'base64')]), format: 'der', type: 'pkcs8' });
  return { privateKey, publicKey: createPublicKey(privateKey).export({ format: 'der', type: 'spki' }).subarray(-32).toString('base64') };
}

/**
 * Opens sealed answers (`x25519-hkdf-sha256-aes256gcm/v1`): base64url of the phone's one-time X25519
 * key (32 bytes), a 12-byte nonce and the AES-256-GCM ciphertext with its tag; the key is
 * HKDF-SHA256 (empty salt, info `service-apps/sealed/v1`) of the shared secret; the app id is the
 * associated data; the plaintext is `{"values": …}`.
 */
export function unseal(privateKey: KeyObject, appId: string, value: string): Record<string, unknown> {
  const bytes = Buffer.from(value, 'base64url');
  if (bytes.length < 32 + 12 + 16) throw new Error('sealed value too short');
  const shared = diffieHellman({ privateKey, publicKey: createPublicKey({ key: Buffer.concat([X25519_SPKI, bytes.subarray(0, 32)]), format: 'der', type: 'spki' }) });
  const key = Buffer.from(hkdfSync('sha256', shared, Buffer.alloc(0), 'service-apps/sealed/v1', 32));
  const decipher = createDecipheriv('aes-256-gcm', key, bytes.subarray(32, 44));
  decipher.setAAD(Buffer.from(appId));
  decipher.setAuthTag(bytes.subarray(-16));
  const plain = JSON.parse(Buffer.concat([decipher.update(bytes.subarray(44, -16)), decipher.final()]).toString('utf8')) as { values?: Record<string, unknown> };
  return plain.values ?? {};
}
