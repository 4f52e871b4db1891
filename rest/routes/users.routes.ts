import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { RouteOptions } from '../route-options.js';
import { IdParam } from '../../src/platform/common.schemas.js';
import { TwoFactorCodeQuerySchema, TwoFactorSetupSchema, UserDtoSchema, UserSchema, UserUpdateSchema, EmailConfirmSchema, NotificationSettingsRequestSchema, NotificationSettingsSchema } from '../../src/users/users.schemas.js';
import { principalOf } from '../auth.js';
import { BODY_ERRORS, authedErrors } from '../responses.js';
import { UsersErrors } from '../../src/users/users.errors.js';

export const usersRoutes: FastifyPluginAsyncZod<RouteOptions> = async (app, { services }) => {
  const { users } = services;
  const tags = ['Users'];
  const security = [{ bearerAuth: [] }];

  app.get('/api/users/me', {
    schema: { tags, security, summary: 'The caller, with the two-factor state', response: { 200: UserSchema, ...authedErrors() } },
    handler: async (request) => users.present(await users.me(principalOf(request))),
  });

  app.patch('/api/users/me', {
    schema: {
      tags,
      security,
      summary: 'Update the display name, e-mail, language or who may add you to rooms',
      description:
        'A new `email` is not used at once: a six-digit code is mailed to it and the address shows as `emailPending` until POST /api/users/me/email/confirm gets the code (within an hour). Only a confirmed address finds you in connection requests by e-mail and receives mail. Whether another account uses the address is never said; confirming it makes it yours.',
      body: UserUpdateSchema,
      response: { 200: UserSchema, ...authedErrors(...BODY_ERRORS) },
    },
    handler: async (request) => users.present(await users.updateMe(principalOf(request), request.body)),
  });

  app.get('/api/users/me/notifications', {
    schema: { tags, security, summary: 'Do-not-disturb and quiet hours for the whole account', response: { 200: NotificationSettingsSchema, ...authedErrors() } },
    handler: async (request) => users.notifications(principalOf(request)),
  });

  app.put('/api/users/me/notifications', {
    schema: {
      tags,
      security,
      summary: 'Set do-not-disturb and quiet hours (what is given changes; the rest stays)',
      description:
        'While quiet (before `doNotDisturbUntil`, or within `quietHours` in their time zone, across midnight too) pushes go without sound or interruption (APNs `interruption-level: passive`, FCM normal priority at low notification priority); the badge still moves. Calls ring (VoIP push) only from connections, and only with `callsFromConnections`; other calls still reach an open app.',
      body: NotificationSettingsRequestSchema,
      response: { 200: NotificationSettingsSchema, ...authedErrors(...BODY_ERRORS) },
    },
    handler: async (request) => users.setNotifications(principalOf(request), request.body),
  });

  app.post('/api/users/me/email/confirm', {
    schema: {
      tags,
      security,
      summary: 'Confirm the e-mail address given with PATCH /api/users/me by the code mailed to it',
      description: '400 EMAIL_CODE_INVALID for a wrong or expired code, or when no address waits; the fifth wrong code drops the waiting address (give it again for a new code).',
      body: EmailConfirmSchema,
      response: { 200: UserSchema, ...authedErrors(UsersErrors.EMAIL_CODE_INVALID, ...BODY_ERRORS) },
    },
    handler: async (request) => users.present(await users.confirmEmail(principalOf(request), request.body.code)),
  });

  app.get('/api/users/:userId', {
    schema: {
      tags,
      security,
      summary: 'Another user\'s public profile',
      params: z.object({ userId: IdParam }),
      response: { 200: UserDtoSchema, ...authedErrors(UsersErrors.USER_NOT_FOUND) },
    },
    handler: async (request) => users.getSummary(principalOf(request), request.params.userId),
  });

  app.post('/api/users/2fa/setup', {
    config: { revealsSecret: true },
    schema: {
      tags,
      security,
      summary: 'Start two-factor setup: a new secret for the authenticator app',
      description: 'The secret is pending until POST /api/users/2fa/enable confirms it with a code. 400 when two-factor is already on.',
      response: { 200: TwoFactorSetupSchema, ...authedErrors(UsersErrors.TWO_FACTOR_ALREADY_ENABLED) },
    },
    handler: async (request) => users.setupTwoFactor(principalOf(request)),
  });

  app.post('/api/users/2fa/enable', {
    schema: {
      tags,
      security,
      summary: 'Turn two-factor on with a code from the pending secret',
      description: 'A wrong or non-numeric code gives 400. Already on: nothing changes.',
      querystring: TwoFactorCodeQuerySchema,
      response: { 200: UserSchema, ...authedErrors(UsersErrors.TWO_FACTOR_NOT_SET_UP, UsersErrors.TWO_FACTOR_CODE_INVALID, UsersErrors.TOO_MANY_ATTEMPTS) },
    },
    handler: async (request) => users.present(await users.enableTwoFactor(principalOf(request), request.query.code)),
  });

  app.post('/api/users/2fa/disable', {
    schema: {
      tags,
      security,
      summary: 'Turn two-factor off with a current code',
      description: 'Replaces the stored secret, so the old authenticator entry stops working. A wrong or non-numeric code gives 400. Already off: nothing changes.',
      querystring: TwoFactorCodeQuerySchema,
      response: { 200: UserSchema, ...authedErrors(UsersErrors.TWO_FACTOR_CODE_INVALID, UsersErrors.TOO_MANY_ATTEMPTS) },
    },
    handler: async (request) => users.present(await users.disableTwoFactor(principalOf(request), request.query.code)),
  });
};
