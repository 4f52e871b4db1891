import { z } from 'zod';
import { DEVICE_PLATFORMS } from '../devices/index.js';
const Phone = z.string().trim().min(4).max(32).describe('Phone number in international (E.164) format, e.g. +14155550123');
const SixDigits = z.string().regex(/^\d{6}$/, 'must be six digits');

export const CodeRequestSchema = z.object({ phone: Phone }).meta({ id: 'LoginCodeRequest' });

export const DeviceInputSchema = z
  .object({
    name: z.string().trim().min(1).max(64).describe('Shown in the device list, e.g. "Anna\'s iPhone"'),
    platform: z.enum(DEVICE_PLATFORMS),
  })
  .meta({ id: 'DeviceRegistration' });

export const LoginRequestSchema = z
  .object({ phone: Phone, code: SixDigits.describe('The code sent by SMS'), device: DeviceInputSchema })
  .meta({ id: 'LoginRequest' });

export const TwoFactorLoginRequestSchema = z
  .object({ twoFactorToken: z.string().min(1).max(4096), code: SixDigits.describe('Current authenticator code') })
  .meta({ id: 'TwoFactorLoginRequest' });

export const RefreshRequestSchema = z.object({ refreshToken: z.string().min(1).max(512) }).meta({ id: 'RefreshRequest' });

export const SessionTokensSchema = z
  .object({
    accessToken: z.string().describe('JWT for Authorization: Bearer'),
    refreshToken: z.string().describe('Single-use; each refresh returns a new one'),
    expiresIn: z.number().int().describe('Seconds until the access token expires'),
    deviceId: z.string(),
    userId: z.string(),
  })
  .meta({ id: 'SessionTokens' });

export const TwoFactorChallengeSchema = z
  .object({
    twoFactorRequired: z.literal(true),
    twoFactorToken: z.string().describe('Send with the authenticator code to POST /api/auth/2fa'),
  })
  .meta({ id: 'TwoFactorChallenge' });

export const LoginResponseSchema = z.union([SessionTokensSchema, TwoFactorChallengeSchema]);
