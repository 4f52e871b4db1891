import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { RouteOptions } from '../route-options.js';
import { IdParam, NoContentSchema } from '../../src/platform/common.schemas.js';
import { ModerationErrors } from '../../src/moderation/moderation.errors.js';
import {
  AdminPagingQuery,
  AuditPageSchema,
  LiftSuspensionSchema,
  ModerationActionSchema,
  ModerationOutcomeSchema,
  ReportDtoSchema,
  ReportRequestSchema,
  ReportedTargetsPageSchema,
} from '../../src/moderation/moderation.schemas.js';
import { principalOf } from '../auth.js';
import { BODY_ERRORS, authedErrors } from '../responses.js';

/** Reports by members, and the site administrators' moderation queue, actions and audit log (docs/clients/moderation.md). */
export const moderationRoutes: FastifyPluginAsyncZod<RouteOptions> = async (app, { services }) => {
  const { moderation } = services;
  const security = [{ bearerAuth: [] }];
  const admin = 'Site administrators only; anyone else gets 401, as for any route they may not use.';

  app.post('/api/reports', {
    schema: {
      tags: ['Reports'],
      security,
      summary: 'Report a message, a user, a room or an app',
      description:
        'Only what the caller can see: a message of a room they read, an existing user, a room they may view, an app listed, theirs or installed; anything else is the same 400 as a missing target. One open report per reporter and target (a repeat answers the first). In an end-to-end encrypted room the server cannot read the message: `decryptedText` is kept, marked as supplied by the reporter. `block` also blocks the reported user (or the message\'s author).',
      body: ReportRequestSchema,
      response: { 200: ReportDtoSchema, ...authedErrors(ModerationErrors.REPORT_TARGET_NOT_FOUND, ModerationErrors.REPORT_SELF, ModerationErrors.TOO_MANY_REPORTS, ...BODY_ERRORS) },
    },
    handler: async (request) => moderation.report(principalOf(request), request.body),
  });

  const tags = ['Moderation'];
  app.get('/api/admin/reports', {
    schema: {
      tags,
      security,
      summary: 'Open reports, grouped by target, the target reported first first',
      description: admin,
      querystring: AdminPagingQuery,
      response: { 200: ReportedTargetsPageSchema, ...authedErrors() },
    },
    handler: async (request) => moderation.queue(principalOf(request), request.query.pageSize, request.query.currentPage),
  });

  app.post('/api/admin/reports/actions', {
    schema: {
      tags,
      security,
      summary: 'Decide a reported target: dismiss, remove the message, suspend the user, or unlist the app',
      description: `${admin} Every open report of the target is decided and its reporter told (\`report.decided\`); the action is written to the audit log. A suspended user is signed out everywhere and refused sign-in (403 ACCOUNT_SUSPENDED, with the reason) until the suspension is lifted.`,
      body: ModerationActionSchema,
      response: { 200: ModerationOutcomeSchema, ...authedErrors(ModerationErrors.MODERATION_ACTION_INVALID, ModerationErrors.NOTHING_TO_DECIDE, ModerationErrors.REPORT_TARGET_NOT_FOUND, ...BODY_ERRORS) },
    },
    handler: async (request) => moderation.act(principalOf(request), request.body),
  });

  app.post('/api/admin/users/:userId/suspension/lift', {
    schema: {
      tags,
      security,
      summary: 'Lift a user\'s suspension: they may sign in again',
      description: admin,
      params: z.object({ userId: IdParam }),
      body: LiftSuspensionSchema,
      response: { 204: NoContentSchema, ...authedErrors(ModerationErrors.REPORT_TARGET_NOT_FOUND, ...BODY_ERRORS) },
    },
    handler: async (request, reply) => {
      await moderation.liftSuspension(principalOf(request), request.params.userId, request.body.reason);
      return reply.code(204).send();
    },
  });

  app.get('/api/admin/audit', {
    schema: { tags, security, summary: 'Every administrator action, newest first', description: admin, querystring: AdminPagingQuery, response: { 200: AuditPageSchema, ...authedErrors() } },
    handler: async (request) => moderation.audit(principalOf(request), request.query.pageSize, request.query.currentPage),
  });
};
