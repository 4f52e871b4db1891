import { freshPhone, signIn, type Session, type TestApp } from './app.js';
import { httpAs } from './factories.js';
import { createCipheriv, createDecipheriv, createPublicKey, diffieHellman, generateKeyPairSync, hkdfSync, randomBytes, sign, type KeyObject } from 'node:crypto';

export const X25519_SPKI = Buffer.from('302a300506032b656e032100', 'hex');
export const ED25519_SPKI = Buffer.from('302a300506032b6570032100', 'hex');
const raw = (key: KeyObject) => key.export({ format: 'der', type: 'spki' }).subarray(-32).toString('base64');

/** A phone's device keys, made as a client app makes them: X25519 to receive room keys, Ed25519 to sign. */
export function deviceKeys() {
  const encryption = generateKeyPairSync('x25519');
  const signing = generateKeyPairSync('ed25519');
  return {
    encryptionKey: raw(encryption.publicKey),
    signingKey: raw(signing.publicKey),
    sign: (message: string) => sign(null, Buffer.from(message), signing.privateKey).toString('base64'),
    /** Opens a room key wrapped to this device (see wrap). */
    unwrap(wrapped: string): Buffer {
      const bytes = Buffer.from(wrapped, 'base64');
      const shared = diffieHellman({ privateKey: encryption.privateKey, publicKey: createPublicKey({ key: Buffer.concat([X25519_SPKI, bytes.subarray(0, 32)]), format: 'der', type: 'spki' }) });
      const key = Buffer.from(hkdfSync('sha256', shared, Buffer.alloc(0), 'room-key-wrap', 32));
      const decipher = createDecipheriv('aes-256-gcm', key, bytes.subarray(32, 44));
      decipher.setAuthTag(bytes.subarray(-16));
      return Buffer.concat([decipher.update(bytes.subarray(44, -16)), decipher.final()]);
    },
  };
}
export type Keys = ReturnType<typeof deviceKeys>;

/** Wraps a room key to a device's X25519 key: an ephemeral key, HKDF, AES-256-GCM (what the server stores, unread). */
export function wrap(roomKey: Buffer, encryptionKey: string): string {
  const ephemeral = generateKeyPairSync('x25519');
  const shared = diffieHellman({ privateKey: ephemeral.privateKey, publicKey: createPublicKey({ key: Buffer.concat([X25519_SPKI, Buffer.from(encryptionKey, 'base64')]), format: 'der', type: 'spki' }) });
  const key = Buffer.from(hkdfSync('sha256', shared, Buffer.alloc(0), 'room-key-wrap', 32));
  const nonce = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, nonce);
  const body = Buffer.concat([cipher.update(roomKey), cipher.final()]);
  return Buffer.concat([Buffer.from(raw(ephemeral.publicKey), 'base64'), nonce, body, cipher.getAuthTag()]).toString('base64');
}

/** The body of PUT /api/e2ee/identity for a device: its public keys and the proof of holding the signing key. */
export function identityRequest(deviceId: string, keys: Keys) {
  return { encryptionKey: keys.encryptionKey, signingKey: keys.signingKey, proof: keys.sign(`E2EE_IDENTITY_V1|${deviceId}|${keys.encryptionKey}|${keys.signingKey}`) };
}

/** A room key wrapped to one device and signed by the uploading device's key, as POST /api/e2ee/rooms/{roomId}/keys takes it. */
export function keyShare(from: Keys, roomId: string, version: number, to: { deviceId: string; keys: Keys }, roomKey: Buffer) {
  const wrappedKey = wrap(roomKey, to.keys.encryptionKey);
  return { deviceId: to.deviceId, wrappedKey, signature: from.sign(`E2EE_SHARE_V1|${roomId}|${version}|${to.deviceId}|${wrappedKey}`) };
}

/** An encrypted blob as a phone makes it: E2A1, a 12-byte nonce, AES-256-GCM ciphertext and its tag. */
export function sealedBlob(plain: Buffer): Buffer {
  const nonce = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', randomBytes(32), nonce);
  return Buffer.concat([Buffer.from('E2A1'), nonce, cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
}

/** A signed-in device and its identity keys. */
export interface Device {
  s: Session;
  keys: Keys;
}

/** A signed-in device with its identity registered (a new user unless `phone` names one). */
export async function registeredDevice(t: TestApp, phone = freshPhone()): Promise<Device> {
  const s = await signIn(t, phone);
  const keys = deviceKeys();
  const registered = await httpAs(() => t)(s, 'PUT', '/api/e2ee/identity', identityRequest(s.deviceId, keys));
  if (registered.statusCode !== 204) throw new Error(`identity registration answered ${registered.statusCode}: ${registered.body}`);
  return { s, keys };
}

/** `keyShare` from one registered device to another. */
export function shareBetween(from: Device, roomId: string, version: number, to: Device, roomKey: Buffer) {
  return keyShare(from.keys, roomId, version, { deviceId: to.s.deviceId, keys: to.keys }, roomKey);
}
