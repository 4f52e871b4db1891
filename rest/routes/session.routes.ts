import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { RouteOptions } from '../route-options.js';
import { NoContentSchema } from '../../src/platform/common.schemas.js';
import { principalOf } from '../auth.js';
import { authedErrors } from '../responses.js';

/** Sign-out: under /api/auth but behind the access token. */
export const sessionRoutes: FastifyPluginAsyncZod<RouteOptions> = async (app, { services }) => {
  app.post('/api/auth/logout', {
    schema: {
      tags: ['Authentication'],
      summary: 'Sign this device out',
      description: 'Revokes the device: its access and refresh tokens and its sockets stop working at once.',
      security: [{ bearerAuth: [] }],
      response: { 204: NoContentSchema, ...authedErrors() },
    },
    handler: async (request, reply) => {
      await services.auth.logout(principalOf(request));
      return reply.code(204).send();
    },
  });
};
