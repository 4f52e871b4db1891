import { z } from 'zod';
import { IsoDateTime } from '../platform/common.schemas.js';

export const AccountDeletionSchema = z
  .object({
    code: z.string().regex(/^\d{6}$/, 'the six digits texted by POST /api/users/me/deletion/code'),
    twoFactorCode: z.string().regex(/^\d{6}$/, 'six digits').optional().describe('The authenticator code: required when two-factor authentication is on'),
    eraseMessages: z.boolean().default(false).describe('Also erase what the account wrote (else its messages stay in their rooms, shown as a deleted account\'s)'),
  })
  .strict()
  .meta({ id: 'AccountDeletionRequest' });

export const AccountExportDtoSchema = z
  .object({
    id: z.string(),
    status: z.enum(['QUEUED', 'READY', 'FAILED']),
    createdAt: IsoDateTime,
    readyAt: IsoDateTime.nullable(),
    deletedAfter: IsoDateTime.describe('The archive is deleted then (7 days after it was asked for)'),
    url: z.string().nullable().describe('While READY: opens the archive without the Authorization header, until urlExpiresAt'),
    urlExpiresAt: IsoDateTime.nullable(),
  })
  .meta({ id: 'AccountExportDto' });
