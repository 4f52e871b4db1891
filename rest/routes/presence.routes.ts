import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { RouteOptions } from '../route-options.js';
import { PresenceQuerySchema, UserPresenceSchema } from '../../src/presence/presence.schemas.js';
import { principalOf } from '../auth.js';
import { authedErrors } from '../responses.js';

export const presenceRoutes: FastifyPluginAsyncZod<RouteOptions> = async (app, { services }) => {
  app.get('/api/presence', {
    schema: {
      tags: ['Users'],
      security: [{ bearerAuth: [] }],
      summary: 'Online state and last-seen time of users',
      description:
        'Answers for the caller, their connections and people sharing a room with them; other ids are left out of the answer. A device is online while a hub node holds its socket and keeps its heartbeat fresh.',
      querystring: PresenceQuerySchema,
      response: { 200: z.array(UserPresenceSchema), ...authedErrors() },
    },
    handler: async (request) => services.presence.ofUsers(principalOf(request), request.query.userIds),
  });
};
