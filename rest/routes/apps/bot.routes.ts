import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { RouteOptions } from '../../route-options.js';
import { IdParam, IsoDateTime } from '../../../src/platform/common.schemas.js';
import { CardSchema } from '../../../src/apps/shared/cards.js';
import { AppsErrors } from '../../../src/apps/apps.errors.js';
import { CommonErrors } from '../../../src/platform/common.errors.js';
import { MessagesErrors } from '../../../src/messages/messages.errors.js';
import { BODY_ERRORS, errorResponses } from '../../responses.js';

const JwksSchema = z
  .object({
    keys: z.array(
      z
        .object({ kty: z.string(), crv: z.string(), x: z.string(), kid: z.string(), alg: z.literal('EdDSA'), use: z.literal('sig') })
        .meta({ id: 'Jwk', description: 'An Ed25519 public key (RFC 8037)' }),
    ),
  })
  .meta({ id: 'Jwks' });

const BotTextSchema = z.object({ text: z.string().max(200_000).describe('The message\'s text') }).strict().meta({ id: 'BotTextMessage' });
const CardPostedSchema = z.object({ messageId: z.string(), roomId: z.string(), createdAt: IsoDateTime }).meta({ id: 'BotCardPosted' });

/** The keys apps verify the service's signatures with (session tokens): public, no Authorization header. */
export const appKeysRoutes: FastifyPluginAsyncZod<RouteOptions> = async (app, { services }) => {
  app.get('/.well-known/jwks.json', {
    schema: {
      tags: ['App keys'],
      summary: 'The keys that verify the session tokens the service signs for apps\' pages: EdDSA over Ed25519; no Authorization header (webhook calls are signed with the app\'s webhook secret; posted cards are not signed)',
      response: { 200: JwksSchema },
    },
    config: { standalone: true },
  }, async (_request, reply) => {
    reply.header('cache-control', 'public, max-age=300');
    return services.appSigner.jwks();
  });
};

/**
 * The bot interface, versioned (`/bot-api/v1`): its own credential (a room bot token), not an access
 * token, so it sits outside `/api`'s authentication; in the apps' document (`/v3/api-docs/app-api`) with the payments interface.
 */
export const botApiRoutes: FastifyPluginAsyncZod<RouteOptions> = async (app, { services }) => {
  app.post('/bot-api/v1/rooms/:roomId/cards', {
    schema: {
      tags: ['Bot interface'],
      security: [{ botToken: [] }],
      summary: 'Post a card into a room the app was added to',
      description: 'With the room\'s bot token (`Authorization: Bearer bbt_…`, from the developer console). Cards per token are limited per minute (429 with Retry-After).',
      params: z.object({ roomId: IdParam }),
      body: CardSchema,
      response: { 201: CardPostedSchema, ...errorResponses(AppsErrors.BOT_TOKEN_INVALID, AppsErrors.BOT_TOKEN_OTHER_ROOM, AppsErrors.TOO_MANY_BOT_CARDS, CommonErrors.VALIDATION_FAILED, ...BODY_ERRORS) },
    },
    handler: async (request, reply) => {
      const posted = await services.bot.postCard(request.headers.authorization, request.params.roomId, request.body);
      return reply.code(201).send(posted);
    },
  });

  app.post('/bot-api/v1/rooms/:roomId/messages', {
    schema: {
      tags: ['Bot interface'],
      security: [{ botToken: [] }],
      summary: 'Post a plain text message into a room the app was added to',
      description: 'With the room\'s bot token, as a card is posted: the same room check and the same budget per token (429 with Retry-After). The text is cleaned as a member\'s post is (control characters out) and holds at most 10,000 characters.',
      params: z.object({ roomId: IdParam }),
      body: BotTextSchema,
      response: { 201: CardPostedSchema, ...errorResponses(AppsErrors.BOT_TOKEN_INVALID, AppsErrors.BOT_TOKEN_OTHER_ROOM, AppsErrors.TOO_MANY_BOT_CARDS, MessagesErrors.MESSAGE_EMPTY, MessagesErrors.MESSAGE_TOO_LONG, CommonErrors.VALIDATION_FAILED, ...BODY_ERRORS) },
    },
    handler: async (request, reply) => {
      const posted = await services.bot.postText(request.headers.authorization, request.params.roomId, request.body.text);
      return reply.code(201).send(posted);
    },
  });
};
