import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { RouteOptions } from '../../app.js';
import { IdParam } from '../../../src/platform/common.schemas.js';
import { CardSchema } from '../../../src/apps/invocations/cards.js';

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
