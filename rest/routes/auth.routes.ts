import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { RouteOptions } from '../route-options.js';
import {
  CodeRequestSchema,
  LoginRequestSchema,
  LoginResponseSchema,
  RefreshRequestSchema,
  SessionTokensSchema,
  TwoFactorLoginRequestSchema,
} from '../../src/auth/auth.schemas.js';
import { NoContentSchema } from '../../src/platform/common.schemas.js';
import { BODY_ERRORS, errorResponses } from '../responses.js';
import { AuthErrors } from '../../src/auth/auth.errors.js';
import { CommonErrors } from '../../src/platform/common.errors.js';
import { UsersErrors } from '../../src/users/users.errors.js';

/** Sign-in routes; no access token needed (docs/clients/sign-in.md). */
export const authRoutes: FastifyPluginAsyncZod<RouteOptions> = async (app, { services }) => {
  const { auth } = services;
  const tags = ['Authentication'];

  app.post('/api/auth/code', {
    schema: {
      tags,
      summary: 'Send a six-digit sign-in code by SMS',
      body: CodeRequestSchema,
      response: { 204: NoContentSchema, ...errorResponses(CommonErrors.PHONE_INVALID, CommonErrors.PHONE_COUNTRY_NOT_ALLOWED, CommonErrors.TOO_MANY_CODES, AuthErrors.TOO_MANY_FROM_ADDRESS, CommonErrors.SMS_UNAVAILABLE, CommonErrors.BUSY, ...BODY_ERRORS) },
    },
    handler: async (request, reply) => {
      await auth.requestCode(request.body.phone, { ip: request.ip });
      return reply.code(204).send();
    },
  });

  app.post('/api/auth/login', {
    schema: {
      tags,
      summary: 'Sign in with the SMS code; registers a new device',
      description: 'A first sign-in with an unknown number creates the user. When two-factor is on, the answer is a challenge for POST /api/auth/2fa.',
      body: LoginRequestSchema,
      response: { 200: LoginResponseSchema, ...errorResponses(CommonErrors.PHONE_INVALID, AuthErrors.CODE_INVALID, UsersErrors.ACCOUNT_SUSPENDED, AuthErrors.TOO_MANY_FROM_ADDRESS, CommonErrors.BUSY, CommonErrors.UNAUTHORIZED, ...BODY_ERRORS) },
    },
    handler: async (request) => auth.login(request.body, { ip: request.ip }),
  });

  app.post('/api/auth/2fa', {
    schema: {
      tags,
      summary: 'Complete a two-factor sign-in with the authenticator code',
      body: TwoFactorLoginRequestSchema,
      response: { 200: SessionTokensSchema, ...errorResponses(UsersErrors.TWO_FACTOR_CODE_INVALID, AuthErrors.TWO_FACTOR_TOKEN_INVALID, UsersErrors.TOO_MANY_ATTEMPTS, AuthErrors.TOO_MANY_FROM_ADDRESS, CommonErrors.UNAUTHORIZED, ...BODY_ERRORS) },
    },
    handler: async (request) => auth.completeTwoFactor(request.body, { ip: request.ip }),
  });

  app.post('/api/auth/refresh', {
    schema: {
      tags,
      summary: 'Swap a refresh token for a new token pair',
      description: 'Refresh tokens are single-use. Presenting a spent one signs the device out.',
      body: RefreshRequestSchema,
      response: { 200: SessionTokensSchema, ...errorResponses(AuthErrors.REFRESH_TOKEN_INVALID, AuthErrors.REFRESH_TOKEN_REUSED, ...BODY_ERRORS) },
    },
    handler: async (request) => auth.refresh(request.body.refreshToken),
  });
};
