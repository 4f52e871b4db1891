import { z } from 'zod';
import { IdParam, IsoDateTime, pagingQuery } from '../platform/common.schemas.js';

export const REPORT_TARGETS = ['MESSAGE', 'USER', 'ROOM', 'APP'] as const;
/** The spec's reason enumeration (block and decline reasons). */
export const REPORT_REASONS = ['UNKNOWN', 'SPAM', 'HARASSMENT', 'INAPPROPRIATE_CONTENT', 'DONT_KNOW_PERSON', 'OTHER'] as const;
export const MODERATION_ACTIONS = ['DISMISS', 'REMOVE_MESSAGE', 'SUSPEND_USER', 'UNLIST_APP'] as const;

export const ReportRequestSchema = z
  .object({
    targetType: z.enum(REPORT_TARGETS),
    targetId: IdParam,
    reason: z.enum(REPORT_REASONS),
    comment: z.string().trim().max(500).optional(),
    decryptedText: z
      .string()
      .max(10_000)
      .optional()
      .describe('End-to-end encrypted rooms: the message as the reporter\'s device decrypted it (the server cannot read it); stored marked as supplied by the reporter'),
    block: z.boolean().default(false).describe('Also block the reported user (a USER target, or a MESSAGE\'s author)'),
  })
  .strict()
  .meta({ id: 'ReportRequest' });

export const ReportDtoSchema = z
  .object({
    id: z.string(),
    targetType: z.enum(REPORT_TARGETS),
    targetId: z.string(),
    reason: z.enum(REPORT_REASONS),
    comment: z.string().nullable(),
    status: z.enum(['OPEN', 'DECIDED']),
    outcome: z.enum(['DISMISSED', 'MESSAGE_REMOVED', 'USER_SUSPENDED', 'APP_UNLISTED']).nullable(),
    createdAt: IsoDateTime,
  })
  .meta({ id: 'ReportDto' });

export const AdminReportSchema = ReportDtoSchema.extend({
  reporterId: z.string(),
  decryptedText: z.string().nullable().describe('Supplied by the reporter (an end-to-end encrypted message): not verified by the server'),
}).meta({ id: 'AdminReport' });

export const ReportedTargetSchema = z
  .object({
    targetType: z.enum(REPORT_TARGETS),
    targetId: z.string(),
    openReports: z.number().int(),
    firstReportedAt: IsoDateTime,
    reports: z.array(AdminReportSchema).describe('The oldest 20 open reports'),
  })
  .meta({ id: 'ReportedTarget' });

export const ReportedTargetsPageSchema = z.object({ items: z.array(ReportedTargetSchema), hasMore: z.boolean() }).meta({ id: 'ReportedTargetsPage' });

export const ModerationActionSchema = z
  .object({
    targetType: z.enum(REPORT_TARGETS),
    targetId: IdParam,
    action: z.enum(MODERATION_ACTIONS),
    reason: z.string().trim().min(1).max(500).describe('Why: kept in the audit log, and shown to a suspended user at sign-in'),
  })
  .strict()
  .meta({ id: 'ModerationAction' });

export const ModerationOutcomeSchema = z.object({ decidedReports: z.number().int() }).meta({ id: 'ModerationOutcome' });

export const AuditEntrySchema = z
  .object({
    id: z.string(),
    adminId: z.string(),
    action: z.string(),
    targetType: z.string(),
    targetId: z.string(),
    reason: z.string(),
    at: IsoDateTime,
  })
  .meta({ id: 'AuditEntry' });

export const AuditPageSchema = z.object({ items: z.array(AuditEntrySchema), hasMore: z.boolean() }).meta({ id: 'AuditPage' });

export const AdminPagingQuery = pagingQuery(50, 200);

export const LiftSuspensionSchema = z.object({ reason: z.string().trim().min(1).max(500) }).strict().meta({ id: 'LiftSuspension' });
