import { z } from 'zod';

export const AccountDeletionSchema = z
  .object({
    code: z.string().regex(/^\d{6}$/, 'the six digits texted by POST /api/users/me/deletion/code'),
    twoFactorCode: z.string().regex(/^\d{6}$/, 'six digits').optional().describe('The authenticator code: required when two-factor authentication is on'),
    eraseMessages: z.boolean().default(false).describe('Also erase what the account wrote (else its messages stay in their rooms, shown as a deleted account\'s)'),
  })
  .strict()
  .meta({ id: 'AccountDeletionRequest' });
