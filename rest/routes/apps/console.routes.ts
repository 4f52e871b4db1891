import { Readable } from 'node:stream';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { RouteOptions } from '../../route-options.js';
import { IdParam, NoContentSchema, pagedSchema, pagingQuery } from '../../../src/platform/common.schemas.js';
import { OPTIONAL_BODY } from '../../openapi.js';
import { ActivityDtoSchema, AppCreateSchema, AppCreatedSchema, AppDtoSchema, AppUpdateSchema, BotTokenCreateSchema, CredentialCreatedSchema, PaymentKeyCreateSchema, CredentialDtoSchema, ManifestResultSchema, ManifestSchema, ReplyTimeoutSchema, WebhookSecretSchema } from '../../../src/apps/apps.schemas.js';
import { AppsErrors } from '../../../src/apps/apps.errors.js';
import { RoomsErrors } from '../../../src/rooms/rooms.errors.js';
import { principalOf } from '../../auth.js';
import { BODY_ERRORS, authedErrors } from '../../responses.js';
import { SUCCESS_CONTENT_TYPE } from '../../openapi.js';

/** The developer console, site administrators' reply time, and room admins adding apps to their rooms (docs/apps/overview.md). */
export const appConsoleRoutes: FastifyPluginAsyncZod<RouteOptions> = async (app, { services }) => {
  const { apps } = services;
  const tags = ['Apps'];
  const security = [{ bearerAuth: [] }];
  const appParam = z.object({ appId: IdParam });
  const notFound = AppsErrors.APP_NOT_FOUND;

  app.post('/api/apps', {
    config: { revealsSecret: true },
    schema: {
      tags,
      security,
      summary: 'Create an app (the caller owns it); its webhook secret is in this answer only',
      body: AppCreateSchema,
      response: { 200: AppCreatedSchema, ...authedErrors(AppsErrors.WEBHOOK_URL_INVALID, ...BODY_ERRORS) },
    },
    handler: async (request) => apps.create(principalOf(request), request.body),
  });

  app.get('/api/apps', {
    schema: { tags, security, summary: 'The caller\'s apps, newest first', response: { 200: z.array(AppDtoSchema), ...authedErrors() } },
    handler: async (request) => apps.list(principalOf(request)),
  });

  app.get('/api/apps/:appId', {
    schema: { tags, security, summary: 'One of the caller\'s apps', params: appParam, response: { 200: AppDtoSchema, ...authedErrors(notFound) } },
    handler: async (request) => apps.present(await apps.owned(principalOf(request), request.params.appId)),
  });

  app.delete('/api/apps/:appId', {
    schema: {
      tags,
      security,
      summary: 'Delete the app: gone for everyone, out of every room, its tokens, keys, installs and deliveries ended',
      description: 'Only once no money is with it: its balance paid out or refunded, no payment open or being paid (400 APP_HOLDS_MONEY saying what). Its cards stay in the rooms as messages. A deletion cut short is finished by deleting again.',
      params: appParam,
      response: { 204: NoContentSchema, ...authedErrors(notFound, AppsErrors.APP_HOLDS_MONEY) },
    },
    handler: async (request, reply) => {
      await apps.deleteApp(principalOf(request), request.params.appId);
      return reply.code(204).send();
    },
  });

  app.patch('/api/apps/:appId', {
    schema: {
      tags,
      security,
      summary: 'Rename an app, list it, or set its webhook URL (saved only once the new URL answers a signed ping with a pong, as in the console)',
      params: appParam,
      body: AppUpdateSchema,
      response: { 200: AppDtoSchema, ...authedErrors(notFound, AppsErrors.WEBHOOK_URL_INVALID, AppsErrors.WEBHOOK_URL_NOT_ANSWERING, AppsErrors.APP_UNLISTED, ...BODY_ERRORS) },
    },
    handler: async (request) => apps.update(principalOf(request), request.params.appId, request.body),
  });

  app.put('/api/apps/:appId/manifest', {
    schema: {
      tags,
      security,
      summary: 'Upload the app\'s manifest: checked against its own declarations, hashed, made current',
      description:
        'The schema\'s checks (unknown input type or scope, missing fields) answer VALIDATION_FAILED naming the field; the manifest\'s own declarations (a command naming a missing flow, a duplicate id, a select without options, a bad sealing key) answer MANIFEST_INVALID naming each problem by its path in `details`. ' +
        'A version uploaded before must come with the same content (400 MANIFEST_VERSION_EXISTS otherwise).',
      params: appParam,
      body: ManifestSchema,
      response: { 200: ManifestResultSchema, ...authedErrors(notFound, AppsErrors.MANIFEST_INVALID, AppsErrors.MANIFEST_VERSION_EXISTS, ...BODY_ERRORS) },
    },
    handler: async (request) => apps.putManifest(principalOf(request), request.params.appId, request.body),
  });

  app.post('/api/apps/:appId/manifest/versions/:version/current', {
    schema: {
      tags,
      security,
      summary: 'Make a manifest version uploaded before the current one again (a rollback)',
      description: 'Members who install, or move their install, from now on get it; installs keep the version they have. 400 APP_NOT_FOUND for a version never uploaded.',
      params: z.object({ appId: IdParam, version: z.string().min(1).max(32).regex(/^[0-9A-Za-z.+-]+$/, 'a version such as 1.0.0') }),
      response: { 200: ManifestResultSchema, ...authedErrors(notFound) },
    },
    handler: async (request) => apps.makeManifestCurrent(principalOf(request), request.params.appId, request.params.version),
  });

  app.post('/api/apps/:appId/webhook-secret/rotate', {
    config: { revealsSecret: true },
    schema: {
      tags,
      security,
      summary: 'A new webhook secret, shown this once; for 24 hours calls carry both signatures',
      params: appParam,
      response: { 200: WebhookSecretSchema, ...authedErrors(notFound) },
    },
    handler: async (request) => apps.rotateSecret(principalOf(request), request.params.appId),
  });

  app.post('/api/apps/:appId/bot-tokens', {
    config: { revealsSecret: true },
    schema: {
      tags,
      security,
      summary: 'A bot token (bbt_…), shown this once: for one room the app was added to, or (no roomId) for every room it is in',
      params: appParam,
      body: BotTokenCreateSchema,
      response: { 200: CredentialCreatedSchema, ...authedErrors(notFound, AppsErrors.APP_NOT_IN_ROOM, ...BODY_ERRORS) },
    },
    handler: async (request) => apps.createCredential(principalOf(request), request.params.appId, 'BOT_TOKEN', request.body.roomId ?? null),
  });

  app.post('/api/apps/:appId/payment-keys', {
    config: { revealsSecret: true },
    schema: {
      tags,
      security,
      summary: 'A payments key (bpk_…), or with {test: true} a test key (bpk_test_…), shown this once',
      params: appParam,
      body: PaymentKeyCreateSchema.nullish(),
      // No body: a live key, as before test keys existed.
      [OPTIONAL_BODY]: true,
      response: { 200: CredentialCreatedSchema, ...authedErrors(notFound, ...BODY_ERRORS) },
    },
    handler: async (request) => apps.createCredential(principalOf(request), request.params.appId, 'PAYMENT_KEY', null, { test: request.body?.test === true }),
  });

  app.get('/api/apps/:appId/credentials', {
    schema: { tags, security, summary: 'The app\'s bot tokens and payments keys in force: prefix and creation time', params: appParam, response: { 200: z.array(CredentialDtoSchema), ...authedErrors(notFound) } },
    handler: async (request) => apps.credentials(principalOf(request), request.params.appId),
  });

  app.delete('/api/apps/:appId/credentials/:credentialId', {
    schema: {
      tags,
      security,
      summary: 'Revoke a bot token or payments key: it stops working at once',
      params: z.object({ appId: IdParam, credentialId: IdParam }),
      response: { 204: NoContentSchema, ...authedErrors(notFound, AppsErrors.CREDENTIAL_NOT_FOUND) },
    },
    handler: async (request, reply) => {
      await apps.revokeCredential(principalOf(request), request.params.appId, request.params.credentialId);
      return reply.code(204).send();
    },
  });

  app.post('/api/apps/:appId/breaker/close', {
    schema: {
      tags,
      security,
      summary: 'Close the app\'s circuit breaker (the owner fixed what failed): the next call goes through at once and its failure count starts again',
      params: appParam,
      response: { 204: NoContentSchema, ...authedErrors(notFound) },
    },
    handler: async (request, reply) => {
      await apps.closeBreaker(principalOf(request), request.params.appId);
      return reply.code(204).send();
    },
  });

  app.post('/api/apps/:appId/ping', {
    schema: {
      tags,
      security,
      summary: 'Send the app a signed ping now (the health check\'s call) and see how it went',
      params: appParam,
      response: { 200: ActivityDtoSchema, ...authedErrors(notFound) },
    },
    handler: async (request) => apps.pingNow(principalOf(request), request.params.appId),
  });

  app.get('/api/apps/:appId/activity', {
    schema: {
      tags,
      security,
      summary: 'Every call to the app\'s webhook in the last 30 days, newest first',
      params: appParam,
      querystring: pagingQuery(50, 500),
      response: { 200: pagedSchema(ActivityDtoSchema, 'PagedModelAppActivityDto'), ...authedErrors(notFound) },
    },
    handler: async (request) => apps.activity(principalOf(request), request.params.appId, request.query.pageSize, request.query.currentPage),
  });

  app.post('/api/apps/:appId/activity/:activityId/replay', {
    schema: {
      tags,
      security,
      summary: 'Send a recorded payment event again, with its original X-Service-Delivery (the app deduplicates on it)',
      params: z.object({ appId: IdParam, activityId: IdParam }),
      response: { 202: NoContentSchema, ...authedErrors(notFound, AppsErrors.NOT_REPLAYABLE) },
    },
    handler: async (request, reply) => {
      await apps.replay(principalOf(request), request.params.appId, request.params.activityId);
      return reply.code(202).send();
    },
  });

  app.get('/api/apps/:appId/activity.csv', {
    schema: {
      tags,
      security,
      summary: 'The activity list as a CSV download (a header row, newest first)',
      params: appParam,
      [SUCCESS_CONTENT_TYPE]: 'text/csv',
      response: { 200: z.string().describe('The activity rows as CSV'), ...authedErrors(notFound) },
    },
    handler: async (request, reply) => {
      const rows = await apps.activityCsv(principalOf(request), request.params.appId);
      reply.type('text/csv; charset=utf-8').header('content-disposition', `attachment; filename="activity-${request.params.appId}.csv"`);
      // A stream is sent as it is read (the serializer is skipped); typed as the documented text.
      return reply.send(Readable.from(rows) as unknown as string);
    },
  });

  app.put('/api/admin/apps/:appId/reply-timeout', {
    schema: {
      tags,
      security,
      summary: 'Site administrators: how long an app may take to reply (1 to 120 seconds; 5 by default)',
      params: appParam,
      body: ReplyTimeoutSchema,
      response: { 200: AppDtoSchema, ...authedErrors(AppsErrors.APP_NOT_FOUND, ...BODY_ERRORS) },
    },
    handler: async (request) => apps.grantReplyTime(principalOf(request), request.params.appId, request.body.seconds),
  });

  const roomApp = z.object({ roomId: IdParam, appId: IdParam });
  app.post('/api/rooms/:roomId/apps/:appId', {
    schema: {
      tags,
      security,
      summary: 'Add an app to a room (the room\'s creator or admins)',
      params: roomApp,
      response: { 204: NoContentSchema, ...authedErrors(RoomsErrors.ROOM_NOT_FOUND, RoomsErrors.ROOM_NOT_ALLOWED, AppsErrors.APP_NOT_FOUND, AppsErrors.APP_NOT_FOR_E2EE) },
    },
    handler: async (request, reply) => {
      await apps.addToRoom(principalOf(request), request.params.roomId, request.params.appId);
      return reply.code(204).send();
    },
  });

  app.delete('/api/rooms/:roomId/apps/:appId', {
    schema: {
      tags,
      security,
      summary: 'Remove an app from a room; its bot tokens for the room stop working',
      params: roomApp,
      response: { 204: NoContentSchema, ...authedErrors(RoomsErrors.ROOM_NOT_FOUND, RoomsErrors.ROOM_NOT_ALLOWED) },
    },
    handler: async (request, reply) => {
      await apps.removeFromRoom(principalOf(request), request.params.roomId, request.params.appId);
      return reply.code(204).send();
    },
  });
};
