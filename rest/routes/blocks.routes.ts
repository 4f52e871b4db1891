import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { RouteOptions } from '../route-options.js';
import { IdParam, NoContentSchema } from '../../src/platform/common.schemas.js';
import { BlockQuerySchema, UserBlockDtoSchema } from '../../src/contacts/contacts.schemas.js';
import { pagedSchema, pagingQuery } from '../../src/platform/common.schemas.js';
import { principalOf } from '../auth.js';
import { authedErrors } from '../responses.js';
import { ContactsErrors } from '../../src/contacts/contacts.errors.js';
import { UsersErrors } from '../../src/users/users.errors.js';

export const blocksRoutes: FastifyPluginAsyncZod<RouteOptions> = async (app, { services }) => {
  const { blocks } = services;
  const tags = ['Users'];
  const security = [{ bearerAuth: [] }];

  app.get('/api/users/blocks', {
    schema: {
      tags,
      security,
      summary: 'Users the caller blocked, most recently blocked first',
      querystring: pagingQuery(10_000, 10_000),
      response: { 200: pagedSchema(UserBlockDtoSchema, 'PagedModelUserBlockDto'), ...authedErrors() },
    },
    handler: async (request) => blocks.list(principalOf(request), request.query.pageSize, request.query.currentPage),
  });

  app.post('/api/users/blocks', {
    schema: {
      tags,
      security,
      summary: 'Block a user',
      description: 'A block either way refuses connection requests and calls, and cancels a pending request between the two. 400 for oneself, a user that does not exist, or one already blocked.',
      querystring: BlockQuerySchema,
      response: { 200: UserBlockDtoSchema, ...authedErrors(UsersErrors.USER_NOT_FOUND, ContactsErrors.BLOCK_SELF, ContactsErrors.ALREADY_BLOCKED) },
    },
    handler: async (request) => blocks.block(principalOf(request), request.query.blockedUserId, request.query.reason),
  });

  app.delete('/api/users/blocks/:blockedUserId', {
    schema: {
      tags,
      security,
      summary: 'Unblock a user',
      description: '400 when the user is not blocked.',
      params: z.object({ blockedUserId: IdParam }),
      response: { 204: NoContentSchema, ...authedErrors(ContactsErrors.NOT_BLOCKED) },
    },
    handler: async (request, reply) => {
      await blocks.unblock(principalOf(request), request.params.blockedUserId);
      return reply.code(204).send();
    },
  });
};
