import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { RouteOptions } from '../route-options.js';
import { AccountDeletionSchema } from '../../src/accounts/accounts.schemas.js';
import { AccountsErrors } from '../../src/accounts/accounts.errors.js';
import { CommonErrors } from '../../src/platform/common.errors.js';
import { NoContentSchema } from '../../src/platform/common.schemas.js';
import { UsersErrors } from '../../src/users/users.errors.js';
import { principalOf } from '../auth.js';
import { BODY_ERRORS, authedErrors } from '../responses.js';

/** Deleting one's own account from the app (docs/clients/people.md, "Deleting an account"). */
export const accountsRoutes: FastifyPluginAsyncZod<RouteOptions> = async (app, { services }) => {
  const { accounts } = services;
  const tags = ['Users'];
  const security = [{ bearerAuth: [] }];

  app.post('/api/users/me/deletion/code', {
    schema: {
      tags,
      security,
      summary: 'Text a code to the account\'s number to confirm deleting the account',
      description: 'The code lives 10 minutes and is used once by DELETE /api/users/me. The sign-in codes\' limits apply (codes per number per window, where texts may go).',
      response: { 204: NoContentSchema, ...authedErrors(CommonErrors.TOO_MANY_CODES, CommonErrors.PHONE_COUNTRY_NOT_ALLOWED, CommonErrors.SMS_UNAVAILABLE, CommonErrors.BUSY) },
    },
    handler: async (request, reply) => {
      await accounts.sendDeletionCode(principalOf(request));
      return reply.code(204).send();
    },
  });

  app.delete('/api/users/me', {
    schema: {
      tags,
      security,
      summary: 'Delete the caller\'s account',
      description:
        'With the texted code (and the authenticator code when two-factor is on). Refused (400 ACCOUNT_HOLDS_MONEY, naming each wallet, app or payment) while money is in the account or on its way. At once every device is signed out (sockets closed, tokens refused, push tokens dropped), the user reads as a deleted account everywhere, and the phone number is free: signing in with it makes a new, empty account. The rest (profile, connections, memberships, keys, apps; with `eraseMessages` what the account wrote) is erased in the background. The ledger keeps its entries.',
      body: AccountDeletionSchema,
      response: {
        204: NoContentSchema,
        ...authedErrors(AccountsErrors.ACCOUNT_HOLDS_MONEY, AccountsErrors.DELETION_CODE_INVALID, CommonErrors.TOO_MANY_CODES, UsersErrors.TWO_FACTOR_CODE_INVALID, UsersErrors.TOO_MANY_ATTEMPTS, ...BODY_ERRORS),
      },
    },
    handler: async (request, reply) => {
      await accounts.delete(principalOf(request), request.body);
      return reply.code(204).send();
    },
  });
};
