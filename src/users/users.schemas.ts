import { isTimeZone } from './quiet.js';
import { z } from 'zod';
import { IsoDateTime, LanguageCode, avatarFields } from '../platform/common.schemas.js';
import { ROOM_INVITES } from './users.repo.js';

const RoomInvitesSchema = z
  .enum(ROOM_INVITES)
  .describe('Who may add you to rooms: `everyone` (people you are not connected to send an invitation you accept or decline), `connections` (only connections; others are refused), `nobody` (nobody; connections may still open a direct chat)');


export const UserSchema = z
  .object({
    id: z.string(),
    phone: z.string(),
    email: z.string().nullable().describe('The confirmed address: the one connection requests by e-mail find, and mail goes to'),
    emailPending: z.string().nullable().describe('An address given and not confirmed yet: a code was mailed to it (POST /api/users/me/email/confirm)'),
    displayName: z.string().nullable(),
    language: z.string(),
    twoFactorEnabled: z.boolean(),
    admin: z.boolean().describe('Site administrator'),
    roomInvites: RoomInvitesSchema,
    readReceipts: z.boolean().describe('Whether you send read receipts and see others\' (default on)'),
    ...avatarFields,
    createdAt: IsoDateTime,
  })
  .meta({ id: 'User' });

export { UserDtoSchema } from '../platform/common.schemas.js';

const ClockTime = z.string().regex(/^([01]\d|2[0-3]):[0-5]\d$/, 'HH:MM, 24-hour clock');
export const NotificationSettingsSchema = z
  .object({
    doNotDisturbUntil: IsoDateTime.nullable().describe('Quiet until then (a past time, or null: not)'),
    quietHours: z
      .object({ start: ClockTime, end: ClockTime.describe('Before `start`: the hours cross midnight'), timeZone: z.string().max(64).refine(isTimeZone, 'an IANA time zone, such as Europe/Berlin').describe('An IANA time zone') })
      .strict()
      .meta({ id: 'QuietHours' })
      .nullable()
      .describe('Quiet every day from start to end, in the time zone given'),
    callsFromConnections: z.boolean().describe('While quiet, calls from connections still ring (others reach an open app but send no ring)'),
  })
  .meta({ id: 'NotificationSettings' });
export const NotificationSettingsRequestSchema = NotificationSettingsSchema.partial().strict().meta({ id: 'NotificationSettingsRequest' });

export const UserUpdateSchema = z
  .object({
    displayName: z.string().trim().min(1).max(64).optional(),
    // RFC 5321, 4.5.3.1: at most 64 characters before the @, 254 in all.
    email: z
      .email('not a valid e-mail address')
      .max(254)
      .refine((value) => value.indexOf('@') <= 64, 'at most 64 characters before the @')
      .transform((value) => value.toLowerCase())
      .optional(),
    language: LanguageCode.optional(),
    roomInvites: RoomInvitesSchema.optional(),
    readReceipts: z.boolean().optional().describe('Off: you neither send read receipts nor see others\''),
  })
  .strict()
  .meta({ id: 'UserUpdateRequest' });

export const EmailConfirmSchema = z.object({ code: z.string().regex(/^\d{6}$/, 'six digits') }).strict().meta({ id: 'EmailConfirmRequest' });

export const TwoFactorCodeQuerySchema = z.object({
  code: z.string().regex(/^\d{6}$/, 'must be six digits').describe('Current six-digit authenticator code'),
});

export const TwoFactorSetupSchema = z
  .object({
    secret: z.string().describe('Base32 TOTP secret'),
    otpauthUri: z.string().describe('otpauth://totp/ URI for authenticator apps (QR code)'),
  })
  .meta({ id: 'TwoFactorSetup' });
