import { defineErrors } from '../platform/errors.js';

export const E2eeErrors = defineErrors('e2ee', {
  IDENTITY_INVALID: { status: 400, message: 'The keys must be base64 of a 32-byte X25519 key and a 32-byte Ed25519 key' },
  IDENTITY_PROOF_INVALID: { status: 400, message: 'The proof is not the signing key\'s signature over E2EE_IDENTITY_V1|<deviceId>|<encryptionKey>|<signingKey>' },
  IDENTITY_EXISTS: { status: 409, message: 'This device already registered its identity keys; another key set needs a new device' },
  BACKUP_INVALID: { status: 400, message: 'A backup needs a version, a known key derivation (argon2id, scrypt, pbkdf2-sha256) with its parameters, and base64 ciphertext' },
  BACKUP_VERSION_CONFLICT: { status: 409, message: 'The stored backup has the same or a higher version' },
  ROOM_NOT_E2EE: { status: 400, message: 'This room is not end-to-end encrypted' },
  DEVICE_MAY_NOT_RECEIVE_KEYS: { status: 400, message: 'This device may not receive room keys: register its identity keys first' },
  KEY_VERSION_INVALID: { status: 400, message: 'No such key version in this room (a new version is the current one plus one)' },
  KEY_SHARE_INVALID: { status: 400, message: 'A share is malformed, or its signature is not this device\'s over E2EE_SHARE_V1|<roomId>|<version>|<deviceId>|<wrappedKey>' },
  KEY_SHARE_RECIPIENT_INVALID: { status: 400, message: 'A share is for a device that may not receive room keys here (no identity, not an active member\'s, or signed out)' },
  KEY_SHARES_INCOMPLETE: { status: 400, message: 'A new key version must carry a share for every eligible device of every active member' },
  KEY_SHARE_EXISTS: { status: 400, message: 'A device already has a share for this version; the first is kept' },
  KEY_VERSION_TAKEN: { status: 409, message: 'Another device created this key version first' },
  TOO_MANY_KEY_CALLS: { status: 429, message: 'Too many key calls; try again shortly' },
  ENCRYPTED_ATTACHMENT_INVALID: { status: 400, message: 'Not an encrypted attachment: it must start with E2A1 and a 12-byte nonce and be at least 32 bytes' },
  ENCRYPTED_ATTACHMENT_TOO_LARGE: { status: 413, message: 'The encrypted attachment is too large' },
});
