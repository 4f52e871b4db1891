import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { fileHeaders, onlyOnMediaHost } from '../downloads.js';
import type { RouteOptions } from '../route-options.js';
import { AccountDeletionSchema, AccountExportDtoSchema } from '../../src/accounts/accounts.schemas.js';
import type { AccountExportDoc } from '../../src/accounts/accounts.repo.js';
import { IdParam } from '../../src/platform/common.schemas.js';
import { z } from 'zod';
import { AccountsErrors } from '../../src/accounts/accounts.errors.js';
import { CommonErrors } from '../../src/platform/common.errors.js';
import { NoContentSchema } from '../../src/platform/common.schemas.js';
import { UsersErrors } from '../../src/users/users.errors.js';
import { principalOf } from '../auth.js';
import { BODY_ERRORS, authedErrors } from '../responses.js';

/** Deleting one's own account from the app (docs/clients/people.md, "Deleting an account"). */
const KEPT_MS = 7 * 24 * 3_600_000;
const presentExport = (doc: AccountExportDoc, link: { url: string; expiresAt: string } | null) => ({
  id: doc._id,
  status: doc.state,
  createdAt: doc.createdAt.toISOString(),
  readyAt: doc.readyAt?.toISOString() ?? null,
  deletedAfter: new Date(doc.createdAt.getTime() + KEPT_MS).toISOString(),
  url: link?.url ?? null,
  urlExpiresAt: link?.expiresAt ?? null,
});

export const accountsRoutes: FastifyPluginAsyncZod<RouteOptions> = async (app, { services }) => {
  const { accounts, accountExports } = services;
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

  app.post('/api/users/me/export', {
    schema: {
      tags,
      security,
      summary: 'Ask for a copy of your data: a ZIP of JSON files',
      description:
        'One a day (429 EXPORT_TOO_SOON with Retry-After before 24 hours have passed). The worker builds it; the caller\'s devices get `account.export-ready` with a link that opens the archive for a few minutes (a fresh one: GET /api/users/me/exports/{exportId}). Archives are deleted after 7 days. What each file holds: docs/clients/people.md.',
      response: { 202: AccountExportDtoSchema, ...authedErrors(AccountsErrors.EXPORT_TOO_SOON) },
    },
    handler: async (request, reply) => reply.code(202).send(presentExport(await accountExports.request(principalOf(request)), null)),
  });

  app.get('/api/users/me/exports/:exportId', {
    schema: {
      tags,
      security,
      summary: 'One of your data exports, with a fresh link while it is ready',
      params: z.object({ exportId: IdParam }),
      response: { 200: AccountExportDtoSchema, ...authedErrors(AccountsErrors.EXPORT_NOT_FOUND) },
    },
    handler: async (request) => {
      const { doc, link } = await accountExports.get(principalOf(request), request.params.exportId);
      return presentExport(doc, link);
    },
  });
};

/** The archive a data export link opens: no Authorization header, the ticket in the path is the credential. */
export const exportFileRoutes: FastifyPluginAsyncZod<RouteOptions> = async (app, { services, config }) => {
  app.get('/exports/:ticket', {
    preHandler: onlyOnMediaHost(config),
    schema: { hide: true, params: z.object({ ticket: z.string().min(10).max(2048) }) },
    handler: async (request, reply) => {
      const file = await services.accountExports.open(request.params.ticket);
      return fileHeaders(reply, { contentType: 'application/zip', filename: file.filename }, { download: true })
        .header('content-length', String(file.size))
        .header('cache-control', 'no-store')
        .send(file.body);
    },
  });
};
