import { z } from 'zod';
import { BLOCK_REASONS } from './blocks.repo.js';
import { IdParam, IsoDateTime, QueryBoolean } from '../platform/common.schemas.js';
import { UserDtoSchema } from '../users/users.schemas.js';

const bool = QueryBoolean;


export const BlockReasonSchema = z.enum(BLOCK_REASONS);

export const ConnectionRequestQuerySchema = z.object({
  email: z.string().max(254).optional(),
  phone: z.string().max(32).optional().describe('International format, e.g. +14155550123'),
  recipientId: IdParam.optional(),
  customMessage: z.string().max(128, 'at most 128 characters').default(''),
});

export const AnswerRequestQuerySchema = z.object({
  accept: bool.describe('true accepts, false declines'),
  reason: BlockReasonSchema.optional().describe('Why the request is declined (and the sender blocked)'),
  block: bool.default(false).describe('With accept=false: also block the sender'),
});

export const ConnectionRequestDtoSchema = z
  .object({
    id: z.string(),
    direction: z.enum(['INCOMING', 'OUTGOING']),
    sender: UserDtoSchema,
    recipient: UserDtoSchema.nullable().describe('Null while it is an invitation to someone without an account'),
    invitedPhone: z.string().nullable(),
    invitedEmail: z.string().nullable(),
    customMessage: z.string(),
    status: z.enum(['PENDING', 'ACCEPTED', 'DECLINED', 'CANCELLED']),
    declineReason: BlockReasonSchema.nullable(),
    createdAt: IsoDateTime,
    answeredAt: IsoDateTime.nullable(),
  })
  .meta({ id: 'UserConnectionRequestDto' });

export const ConnectionDtoSchema = z
  .object({ user: UserDtoSchema, since: IsoDateTime, disableIncomingCalls: z.boolean() })
  .meta({ id: 'UserConnectionDto' });

export const IncomingCallsSettingSchema = z.object({ disableIncomingCalls: z.boolean() }).meta({ id: 'IncomingCallsSetting' });
export const IncomingCallsQuerySchema = z.object({ disableIncomingCalls: bool });

export const BlockQuerySchema = z.object({ blockedUserId: IdParam, reason: BlockReasonSchema.optional() });

export const UserBlockDtoSchema = z
  .object({ blockedUser: UserDtoSchema, reason: BlockReasonSchema, createdAt: IsoDateTime })
  .meta({ id: 'UserBlockDto' });
