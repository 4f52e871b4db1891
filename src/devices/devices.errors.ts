import { defineErrors } from '../platform/errors.js';

export const DevicesErrors = defineErrors('devices', {
  DEVICE_REVOKED: { status: 401, message: 'This device was signed out' },
  DEVICE_NOT_FOUND: { status: 400, message: 'No such active device among yours' },
  BIOMETRIC_KEY_INVALID: { status: 400, message: 'Not a public key of the given algorithm' },
  BIOMETRIC_NONCE_INVALID: { status: 400, message: 'The nonce is unknown, expired or used; ask for a new one' },
  BIOMETRIC_SIGNATURE_INVALID: { status: 400, message: 'The signature does not prove possession of this key' },
  BIOMETRIC_PROOF_REQUIRED: { status: 403, message: 'Give the enrolled key\'s signature or a code' },
  BIOMETRIC_PROOF_INVALID: { status: 403, message: 'The proof is invalid' },
  BIOMETRIC_CONFIRMATION_REQUIRED: { status: 403, message: 'This device must confirm with its biometric key' },
  BIOMETRIC_CONFIRMATION_INVALID: { status: 403, message: 'The biometric signature is invalid' },
  TOO_MANY_CODE_ATTEMPTS: { status: 429, message: 'Too many wrong codes for this account; try again later' },
});
