import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { RouteOptions } from '../../route-options.js';
import { IdParam } from '../../../src/platform/common.schemas.js';
import { AppsErrors } from '../../../src/apps/apps.errors.js';
import { BODY_ERRORS, errorResponses } from '../../responses.js';
import { CommonErrors } from '../../../src/platform/common.errors.js';
import type { CodedError } from '../../../src/platform/errors.js';
import { AppApiPaymentSchema, BalanceSchema, IdempotencyKeyHeader, MoneyResultSchema, PayoutRequestSchema, RefundRequestSchema } from '../../../src/apps/payments/app-api.service.js';

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
    handler: async (request) => appApi.balance(await appApi.authenticate(request.headers.authorization)),
  });

  app.get('/app-api/v1/payments', {
    schema: { tags, security, summary: 'A payment by the reference the app gave it', querystring: z.object({ reference: z.string().min(1).max(64) }), response: { 200: AppApiPaymentSchema, ...errors(AppsErrors.APP_PAYMENT_NOT_FOUND) } },
    handler: async (request) => appApi.payment(await appApi.authenticate(request.headers.authorization), { reference: request.query.reference }),
  });

  app.get('/app-api/v1/payments/:paymentId', {
    schema: { tags, security, summary: 'A payment by its id', params: z.object({ paymentId: IdParam }), response: { 200: AppApiPaymentSchema, ...errors(AppsErrors.APP_PAYMENT_NOT_FOUND) } },
    handler: async (request) => appApi.payment(await appApi.authenticate(request.headers.authorization), { paymentId: request.params.paymentId }),
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
    handler: async (request) => appApi.refund(await appApi.authenticate(request.headers.authorization), request.params.paymentId, request.headers['idempotency-key'], request.body ?? {}),
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
    handler: async (request) => appApi.payout(await appApi.authenticate(request.headers.authorization), request.headers['idempotency-key'], request.body),
  });

  app.post('/app-api/v1/follow-ups/:token', {
    schema: {
      tags: ['Deferred answers'],
      summary: 'Answer an invocation later: the follow-up URL of its body (after a `deferred` reply), no other credential',
      description:
        'A card (into the room the member invoked from, or `visibility: private` to the member alone), an ack or an error, checked as a reply is. Up to 5 answers within 15 minutes of the invocation (429 FOLLOW_UP_USED_UP after); 401 FOLLOW_UP_INVALID for a URL the service did not make, or one expired. Private answers reach the member\'s devices as the device event `app.follow-up`.',
      params: z.object({ token: z.string().min(1).max(1024).regex(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/) }),
      body: z.unknown(),
      response: { 200: FollowUpResultSchema, ...errorResponses(AppsErrors.FOLLOW_UP_INVALID, AppsErrors.FOLLOW_UP_USED_UP, CommonErrors.VALIDATION_FAILED, ...BODY_ERRORS) },
    },
    handler: async (request) => services.appInvocations.followUp(request.params.token, request.body),
  });
};

const FollowUpResultSchema = z
  .object({ outcome: z.enum(['card', 'ack', 'error']), messageId: z.string().nullable().describe('A card posted into the room: its message') })
  .meta({ id: 'AppFollowUpResult' });
