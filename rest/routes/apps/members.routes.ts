import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { RouteOptions } from '../../route-options.js';
import { IdParam, IsoDateTime, NoContentSchema, QueryBoolean, pagedSchema, pagingQuery } from '../../../src/platform/common.schemas.js';
import { AppForMemberSchema, DirectoryEntrySchema, InstallDtoSchema } from '../../../src/apps/apps.schemas.js';
import { RoomsErrors } from '../../../src/rooms/rooms.errors.js';
import { AppsErrors } from '../../../src/apps/apps.errors.js';
import { AppPaymentConfirmSchema, AppPaymentDtoSchema, AppPaymentResultSchema } from '../../../src/apps/payments/payments.service.js';
import { WalletsErrors } from '../../../src/wallets/wallets.errors.js';
import { DevicesErrors } from '../../../src/devices/devices.errors.js';
import { principalOf } from '../../auth.js';
import { BODY_ERRORS, authedErrors } from '../../responses.js';

/** Members' side: the directory, installs, session tokens, and the payment sheet an app opens (docs/apps/overview.md). */
export const appMembersRoutes: FastifyPluginAsyncZod<RouteOptions> = async (app, { services }) => {
  const { appInstalls } = services;
  const tags = ['Apps'];
  const security = [{ bearerAuth: [] }];
  const appParam = z.object({ appId: IdParam });

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

  app.get('/api/apps/:appId/manifest', {
    schema: {
      tags,
      security,
      summary: 'An app as a phone shows it: name, health and the manifest the caller uses',
      description:
        'For an app the caller installed (its installed version), owns, finds in the directory, or, with `roomId`, that was added to a room the caller reads (the current version). The manifest has the commands, flows with their views and inputs (with their rules) and scopes. Anything else is 400 APP_NOT_FOUND.',
      params: appParam,
      querystring: z.object({ roomId: IdParam.optional().describe('A room the app was added to, for an app the caller did not install') }),
      response: { 200: AppForMemberSchema, ...authedErrors(AppsErrors.APP_NOT_FOUND, AppsErrors.APP_HAS_NO_MANIFEST) },
    },
    handler: async (request) => appInstalls.forMember(principalOf(request), request.params.appId, request.query.roomId),
  });

  app.get('/api/rooms/:roomId/apps', {
    schema: {
      tags,
      security,
      summary: 'The apps added to a room: every member of the room may use them (apps asking for name, language or location once installed)',
      params: z.object({ roomId: IdParam }),
      response: { 200: z.array(DirectoryEntrySchema), ...authedErrors(RoomsErrors.ROOM_NOT_FOUND) },
    },
    handler: async (request) => appInstalls.ofRoom(principalOf(request), request.params.roomId),
  });

  app.post('/api/apps/:appId/install', {
    schema: {
      tags,
      security,
      summary: 'Install an app, or move the install to its newest manifest version',
      description: 'A public app, the caller\'s own, or (with `roomId`) an app added to a room the caller is a member of, listed or not: installing is the consent an app that asks for personal scopes needs before a member of its room may use it. The answer carries the id the app knows the caller by: the same after removing and installing again, new only after removing with forget=true.',
      params: appParam,
      querystring: z.object({ roomId: IdParam.optional().describe('The room the caller met the app in (an unlisted app is installed from its room)') }),
      response: { 200: InstallDtoSchema, ...authedErrors(AppsErrors.APP_NOT_FOUND, AppsErrors.APP_HAS_NO_MANIFEST) },
    },
    handler: async (request) => appInstalls.install(principalOf(request), request.params.appId, request.query.roomId),
  });

  app.post('/api/apps/:appId/session-token', {
    config: { revealsSecret: true },
    schema: {
      tags,
      security,
      summary: 'A 5-minute token naming the caller to the app (by its id for them), signed with the key published at /.well-known/jwks.json',
      params: appParam,
      response: { 200: z.object({ token: z.string(), expiresAt: IsoDateTime }).meta({ id: 'AppSessionTokenDto' }), ...authedErrors(AppsErrors.APP_NOT_FOUND, AppsErrors.APP_NOT_INSTALLED) },
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
      description: 'The money moves from the wallet to the app\'s balance once; the app is sent payment.completed, and its answer (a private card, an ack or an error) comes back as `reply` when the first delivery brings one. A test payment (`test: true`, an app in test mode) moves no money: no wallet is needed (one named is checked, its balance is not).',
      params: payment,
      body: AppPaymentConfirmSchema,
      response: {
        200: AppPaymentResultSchema,
        ...authedErrors(...paymentErrors, AppsErrors.APP_PAYMENT_CURRENCY, AppsErrors.APP_PAYMENT_WALLET_REQUIRED, WalletsErrors.WALLET_NOT_FOUND, WalletsErrors.INSUFFICIENT_FUNDS, DevicesErrors.BIOMETRIC_CONFIRMATION_REQUIRED, DevicesErrors.BIOMETRIC_CONFIRMATION_INVALID, ...BODY_ERRORS),
      },
    },
    handler: async (request) => services.appPayments.confirm(principalOf(request), request.params.paymentId, request.body),
  });

  app.post('/api/app-payments/:paymentId/decline', {
    schema: { tags, security, summary: 'Decline what an app asked for (the app is told)', params: payment, response: { 200: AppPaymentDtoSchema, ...authedErrors(...paymentErrors) } },
    handler: async (request) => services.appPayments.decline(principalOf(request), request.params.paymentId),
  });
};
