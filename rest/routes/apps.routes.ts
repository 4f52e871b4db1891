import { Readable } from 'node:stream';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { RouteOptions } from '../app.js';
import { IdParam, NoContentSchema, QueryBoolean } from '../../src/platform/common.schemas.js';
import { pagedSchema, pagingQuery } from '../../src/contacts/contacts.schemas.js';
import {
  ActivityDtoSchema,
  AppCreateSchema,
  AppCreatedSchema,
  AppDtoSchema,
  AppUpdateSchema,
  BotTokenCreateSchema,
  CredentialCreatedSchema,
  CredentialDtoSchema,
  DirectoryEntrySchema,
  InstallDtoSchema,
  ManifestResultSchema,
  ManifestSchema,
  ReplyTimeoutSchema,
  WebhookSecretSchema,
} from '../../src/apps/apps.schemas.js';
import { AppsErrors } from '../../src/apps/apps.errors.js';
import { RoomsErrors } from '../../src/rooms/rooms.errors.js';
import { MessagesErrors } from '../../src/messages/messages.errors.js';
import { ContactsErrors } from '../../src/contacts/contacts.errors.js';
import { InvocationResultSchema, InvokeSchema } from '../../src/apps/invocations.service.js';
import { CardSchema } from '../../src/apps/cards.js';
import { AppPaymentConfirmSchema, AppPaymentDtoSchema, AppPaymentResultSchema } from '../../src/apps/payments.service.js';
import { WalletsErrors } from '../../src/wallets/wallets.errors.js';
import { DevicesErrors } from '../../src/devices/devices.errors.js';
import { principalOf } from '../auth.js';
import { BODY_ERRORS, authedErrors, errorResponses } from '../responses.js';
import { CommonErrors } from '../../src/platform/common.errors.js';
import type { CodedError } from '../../src/platform/errors.js';
import { AppApiPaymentSchema, BalanceSchema, IdempotencyKeyHeader, MoneyResultSchema, PayoutRequestSchema, RefundRequestSchema } from '../../src/apps/app-api.service.js';
import { SUCCESS_CONTENT_TYPE } from '../openapi.js';

/** The developer console and room admins' app settings (DESIGN.md, "App platform"). */
export const appsRoutes: FastifyPluginAsyncZod<RouteOptions> = async (app, { services }) => {
  const { apps, appInstalls, appInvocations } = services;
  const tags = ['Apps'];
  const security = [{ bearerAuth: [] }];
  const appParam = z.object({ appId: IdParam });
  const notFound = AppsErrors.APP_NOT_FOUND;

  app.post('/api/apps', {
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

  app.patch('/api/apps/:appId', {
    schema: {
      tags,
      security,
      summary: 'Rename an app or set its webhook URL',
      params: appParam,
      body: AppUpdateSchema,
      response: { 200: AppDtoSchema, ...authedErrors(notFound, AppsErrors.WEBHOOK_URL_INVALID, ...BODY_ERRORS) },
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

  app.post('/api/apps/:appId/webhook-secret/rotate', {
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
    schema: {
      tags,
      security,
      summary: 'A room bot token (bbt_…) for a room the app was added to, shown this once',
      params: appParam,
      body: BotTokenCreateSchema,
      response: { 200: CredentialCreatedSchema, ...authedErrors(notFound, AppsErrors.APP_NOT_IN_ROOM, ...BODY_ERRORS) },
    },
    handler: async (request) => apps.createCredential(principalOf(request), request.params.appId, 'BOT_TOKEN', request.body.roomId),
  });

  app.post('/api/apps/:appId/payment-keys', {
    schema: { tags, security, summary: 'A payments key (bpk_…), shown this once', params: appParam, response: { 200: CredentialCreatedSchema, ...authedErrors(notFound) } },
    handler: async (request) => apps.createCredential(principalOf(request), request.params.appId, 'PAYMENT_KEY', null),
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

  app.get('/api/apps/directory', {
    schema: {
      tags,
      security,
      summary: 'Public apps, by name, with their health; `q` matches words of the name',
      querystring: pagingQuery(20, 100).extend({ q: z.string().max(100).optional() }),
      response: { 200: pagedSchema(DirectoryEntrySchema, 'PagedModelAppDirectoryEntryDto'), ...authedErrors() },
    },
    handler: async (request) => appInstalls.directory(request.query.q, request.query.pageSize, request.query.currentPage),
  });

  app.get('/api/apps/installed', {
    schema: { tags, security, summary: 'The caller\'s installed apps, each with the manifest version in use and the newest', response: { 200: z.array(InstallDtoSchema), ...authedErrors() } },
    handler: async (request) => appInstalls.installed(principalOf(request)),
  });

  app.post('/api/apps/:appId/install', {
    schema: {
      tags,
      security,
      summary: 'Install an app, or move the install to its newest manifest version',
      description: 'A public app, or the caller\'s own. The answer carries the id the app knows the caller by: the same after removing and installing again, new only after removing with forget=true.',
      params: appParam,
      response: { 200: InstallDtoSchema, ...authedErrors(AppsErrors.APP_NOT_FOUND, AppsErrors.APP_HAS_NO_MANIFEST) },
    },
    handler: async (request) => appInstalls.install(principalOf(request), request.params.appId),
  });

  app.post('/api/apps/:appId/session-token', {
    schema: {
      tags,
      security,
      summary: 'A 5-minute token naming the caller to the app (by its id for them), signed with the key published at /.well-known/jwks.json',
      params: appParam,
      response: { 200: z.object({ token: z.string(), expiresAt: z.string() }).meta({ id: 'AppSessionTokenDto' }), ...authedErrors(AppsErrors.APP_NOT_FOUND, AppsErrors.APP_NOT_INSTALLED) },
    },
    handler: async (request) => appInstalls.sessionToken(principalOf(request), request.params.appId, (claims) => services.appSigner.sign(claims)),
  });

  app.delete('/api/apps/:appId/install', {
    schema: {
      tags,
      security,
      summary: 'Remove an app; with forget=true the app\'s id for the caller is forgotten too',
      params: appParam,
      querystring: z.object({ forget: QueryBoolean.default(false) }),
      response: { 204: NoContentSchema, ...authedErrors() },
    },
    handler: async (request, reply) => {
      await appInstalls.uninstall(principalOf(request), request.params.appId, request.query.forget);
      return reply.code(204).send();
    },
  });

  app.put('/api/admin/apps/:appId/reply-timeout', {
    schema: {
      tags,
      security,
      summary: 'Site administrators: how long an app may take to reply (1 to 120 seconds; 5 by default)',
      params: appParam,
      body: ReplyTimeoutSchema,
      response: { 200: AppDtoSchema, ...authedErrors(AppsErrors.APP_TIMEOUT_ADMIN_ONLY, AppsErrors.APP_NOT_FOUND, ...BODY_ERRORS) },
    },
    handler: async (request) => apps.grantReplyTime(principalOf(request), request.params.appId, request.body.seconds),
  });

  const invocationErrors = [
    AppsErrors.APP_NOT_FOUND,
    AppsErrors.APP_NOT_INSTALLED,
    AppsErrors.APP_HAS_NO_MANIFEST,
    AppsErrors.APP_NOT_IN_ROOM,
    AppsErrors.INVOCATION_INVALID,
    AppsErrors.INVOCATION_VALUES_INVALID,
    AppsErrors.INVOCATION_NOT_FOUND,
    AppsErrors.INVOCATION_STEP_LIMIT,
    RoomsErrors.ROOM_NOT_FOUND,
    RoomsErrors.NOT_A_MEMBER,
    MessagesErrors.PUBLISH_NOT_ALLOWED,
    MessagesErrors.MESSAGE_NOT_FOUND,
    ContactsErrors.BLOCKED,
    ...BODY_ERRORS,
  ] as const;
  app.post('/api/apps/:appId/invocations', {
    schema: {
      tags,
      security,
      summary: 'Invoke an app: a command, a form step, or a card\'s submit button; the answer is what the phone shows',
      description:
        'The answers are checked against the manifest version the caller installed (400 naming the input) before anything is sent. The app\'s reply comes back as `outcome`: card (posted into the room, or private), ack, error, view (the next step of a dynamic form: answer it with this invocationId and step), or failed with the message to show. A form has at most 8 steps.',
      params: appParam,
      body: InvokeSchema,
      response: { 200: InvocationResultSchema, ...authedErrors(...invocationErrors) },
    },
    handler: async (request) => appInvocations.invoke(principalOf(request), request.params.appId, request.body, { ip: request.ip, testConsole: false }),
  });

  app.post('/api/apps/:appId/test-invocations', {
    schema: {
      tags,
      security,
      summary: 'The test console: the app\'s owner invokes it with no room (as a tester until they install it)',
      params: appParam,
      body: InvokeSchema,
      response: { 200: InvocationResultSchema, ...authedErrors(...invocationErrors) },
    },
    handler: async (request) => appInvocations.invoke(principalOf(request), request.params.appId, request.body, { ip: request.ip, testConsole: true }),
  });

  const payment = z.object({ paymentId: IdParam });
  const paymentErrors = [AppsErrors.APP_PAYMENT_NOT_FOUND, AppsErrors.APP_PAYMENT_CLOSED] as const;
  app.get('/api/app-payments/:paymentId', {
    schema: { tags, security, summary: 'A payment an app asked the caller for', params: payment, response: { 200: AppPaymentDtoSchema, ...authedErrors(AppsErrors.APP_PAYMENT_NOT_FOUND) } },
    handler: async (request) => services.appPayments.get(principalOf(request), request.params.paymentId),
  });

  app.post('/api/app-payments/:paymentId/confirm', {
    schema: {
      tags,
      security,
      summary: 'Pay what an app asked for, from a wallet of its currency (biometric confirmation when the device has a key)',
      description: 'The money moves from the wallet to the app\'s balance once; the app is sent payment.completed, and its answer (a private card, an ack or an error) comes back as `reply` when the first delivery brings one.',
      params: payment,
      body: AppPaymentConfirmSchema,
      response: {
        200: AppPaymentResultSchema,
        ...authedErrors(...paymentErrors, AppsErrors.APP_PAYMENT_CURRENCY, WalletsErrors.WALLET_NOT_FOUND, WalletsErrors.INSUFFICIENT_FUNDS, DevicesErrors.BIOMETRIC_CONFIRMATION_REQUIRED, DevicesErrors.BIOMETRIC_CONFIRMATION_INVALID, ...BODY_ERRORS),
      },
    },
    handler: async (request) => services.appPayments.confirm(principalOf(request), request.params.paymentId, request.body),
  });

  app.post('/api/app-payments/:paymentId/decline', {
    schema: { tags, security, summary: 'Decline what an app asked for (the app is told)', params: payment, response: { 200: AppPaymentDtoSchema, ...authedErrors(...paymentErrors) } },
    handler: async (request) => services.appPayments.decline(principalOf(request), request.params.paymentId),
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

/** The keys apps verify the service's signatures with (cards, session tokens): public, no Authorization header. */
export const appKeysRoutes: FastifyPluginAsyncZod<RouteOptions> = async (app, { services }) => {
  app.get('/.well-known/jwks.json', { schema: { hide: true }, config: { standalone: true } }, async (_request, reply) => {
    reply.header('cache-control', 'public, max-age=300');
    return services.appSigner.jwks();
  });
};

/**
 * The bot interface, versioned (`/bot-api/v1`): its own credential (a room bot token), not an access
 * token, so it sits outside `/api`'s authentication; documented in the README, not the `/api` document.
 */
export const botApiRoutes: FastifyPluginAsyncZod<RouteOptions> = async (app, { services }) => {
  app.post('/bot-api/v1/rooms/:roomId/cards', {
    schema: { hide: true, params: z.object({ roomId: IdParam }), body: CardSchema },
    handler: async (request, reply) => {
      const posted = await services.bot.postCard(request.headers.authorization, request.params.roomId, request.body);
      return reply.code(201).send(posted);
    },
  });
};

/**
 * The payments interface, versioned (`/app-api/v1`, a payments key `bpk_…`), in its own OpenAPI
 * document (`/v3/api-docs/app-api`). Refunds and payouts take the app's `Idempotency-Key` header.
 */
export const appApiRoutes: FastifyPluginAsyncZod<RouteOptions> = async (app, { services }) => {
  const { appApi } = services;
  const tags = ['Payments interface'];
  const security = [{ paymentsKey: [] }];
  const errors = (...codes: CodedError[]) => errorResponses(AppsErrors.PAYMENT_KEY_INVALID, CommonErrors.VALIDATION_FAILED, ...codes);
  const keyHeader = z.object({ 'idempotency-key': IdempotencyKeyHeader });

  app.get('/app-api/v1/balance', {
    schema: { tags, security, summary: 'What the app holds: what members paid it, less refunds and payouts', response: { 200: BalanceSchema, ...errors() } },
    handler: async (request) => appApi.balance((await appApi.authenticate(request.headers.authorization)).appId),
  });

  app.get('/app-api/v1/payments', {
    schema: { tags, security, summary: 'A payment by the reference the app gave it', querystring: z.object({ reference: z.string().min(1).max(64) }), response: { 200: AppApiPaymentSchema, ...errors(AppsErrors.APP_PAYMENT_NOT_FOUND) } },
    handler: async (request) => appApi.payment((await appApi.authenticate(request.headers.authorization)).appId, { reference: request.query.reference }),
  });

  app.get('/app-api/v1/payments/:paymentId', {
    schema: { tags, security, summary: 'A payment by its id', params: z.object({ paymentId: IdParam }), response: { 200: AppApiPaymentSchema, ...errors(AppsErrors.APP_PAYMENT_NOT_FOUND) } },
    handler: async (request) => appApi.payment((await appApi.authenticate(request.headers.authorization)).appId, { paymentId: request.params.paymentId }),
  });

  app.post('/app-api/v1/payments/:paymentId/refunds', {
    schema: {
      tags,
      security,
      summary: 'Refund a completed payment, fully (no amount) or in part, to the wallet it was paid from',
      description: 'Idempotent by the Idempotency-Key header: a repeat returns the first result, finishing it if it was interrupted; the same key with another amount is 400. Refunds together never exceed the payment.',
      params: z.object({ paymentId: IdParam }),
      headers: keyHeader,
      body: RefundRequestSchema,
      response: { 200: MoneyResultSchema, ...errors(AppsErrors.APP_PAYMENT_NOT_FOUND, AppsErrors.PAYMENT_NOT_REFUNDABLE, AppsErrors.REFUND_EXCEEDS_PAYMENT, AppsErrors.APP_BALANCE_SHORT, AppsErrors.AMOUNT_INVALID_FOR_APP, AppsErrors.APP_IDEMPOTENCY_KEY_REUSED, ...BODY_ERRORS) },
    },
    handler: async (request) => appApi.refund((await appApi.authenticate(request.headers.authorization)).appId, request.params.paymentId, request.headers['idempotency-key'], request.body ?? {}),
  });

  app.post('/app-api/v1/payouts', {
    schema: {
      tags,
      security,
      summary: 'Pay a member (by the id this app knows them by) from the app\'s balance into their wallet of that currency',
      description: 'Idempotent by the Idempotency-Key header; refused when the balance is short.',
      headers: keyHeader,
      body: PayoutRequestSchema,
      response: { 200: MoneyResultSchema, ...errors(AppsErrors.APP_MEMBER_NOT_FOUND, AppsErrors.APP_MEMBER_HAS_NO_WALLET, AppsErrors.APP_BALANCE_SHORT, AppsErrors.AMOUNT_INVALID_FOR_APP, AppsErrors.APP_IDEMPOTENCY_KEY_REUSED, ...BODY_ERRORS) },
    },
    handler: async (request) => appApi.payout((await appApi.authenticate(request.headers.authorization)).appId, request.headers['idempotency-key'], request.body),
  });
};
