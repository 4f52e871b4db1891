import { z } from 'zod';
import { BIOMETRIC_ALGORITHMS } from './signatures.js';
import { IsoDateTime } from '../platform/common.schemas.js';

const Base64 = z.string().min(1).max(4096).regex(/^[A-Za-z0-9+/_-]+={0,2}$/, 'expected base64');
const Nonce = z.string().min(1).max(128);

export const BiometricNonceSchema = z
  .object({ nonce: z.string(), expiresAt: IsoDateTime })
  .meta({ id: 'BiometricNonce', description: 'Single use, bound to the calling device, valid five minutes' });

export const BiometricKeyEnrollSchema = z
  .object({
    publicKey: Base64.describe('SubjectPublicKeyInfo DER, or the raw key (65-byte P-256 point, 32-byte Ed25519), in base64'),
    algorithm: z.enum(BIOMETRIC_ALGORITHMS),
    nonce: Nonce.describe('From POST /api/devices/biometric-key/nonce'),
    signature: Base64.describe('New key over "BIOMETRIC_KEY_ENROLL_V1|<nonce>"'),
    currentKeySignature: Base64.optional().describe('Enrolled key over "BIOMETRIC_KEY_CHANGE_V1|REPLACE|<nonce>"; or give code'),
    code: z.string().max(16).optional().describe('Code from POST /api/devices/biometric-key/code'),
  })
  .strict()
  .meta({ id: 'BiometricKeyEnrollRequest' });

export const BiometricKeyRemoveSchema = z
  .object({
    nonce: Nonce.optional(),
    signature: Base64.optional().describe('Enrolled key over "BIOMETRIC_KEY_CHANGE_V1|REMOVE|<nonce>"'),
    code: z.string().max(16).optional().describe('Code from POST /api/devices/biometric-key/code'),
  })
  .strict()
  .meta({ id: 'BiometricKeyRemoveRequest' });
