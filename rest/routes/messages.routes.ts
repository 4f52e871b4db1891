import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { RouteOptions } from '../route-options.js';
import { IdParam } from '../../src/platform/common.schemas.js';
import { ChatMessageSchema, MessagesPageSchema, MessagesQuerySchema } from '../../src/messages/messages.schemas.js';
import { afterAnswerOf } from '../after-answer.js';
import { principalOf } from '../auth.js';
import { BODY_ERRORS, authedErrors } from '../responses.js';
import { ContactsErrors } from '../../src/contacts/contacts.errors.js';
import { MessagesErrors } from '../../src/messages/messages.errors.js';
import { RoomsErrors } from '../../src/rooms/rooms.errors.js';

export const messagesRoutes: FastifyPluginAsyncZod<RouteOptions> = async (app, { services }) => {
  const { messages, messageReading } = services;
  const tags = ['Messages'];
  const security = [{ bearerAuth: [] }];
  const room = z.object({ roomId: IdParam });

  app.put('/api/messages/:roomId', {
    schema: {
      tags,
      security,
      summary: 'Post a message; answers its id',
      description:
        'Enabled members only. In a broadcast room, or where participants may not publish, only the creator or an admin (or a participant allowed by the publish switch). The body\'s roomId must equal the path\'s. An end-to-end encrypted room takes only an encrypted message (base64 of at least 28 bytes). Members\' sockets get `message.new`.',
      params: room,
      body: ChatMessageSchema,
      response: { 200: z.string().describe('Id of the new message'), ...authedErrors(MessagesErrors.ROOM_ID_MISMATCH, MessagesErrors.ATTACHMENT_NOT_FOUND, RoomsErrors.ROOM_NOT_FOUND, RoomsErrors.NOT_A_MEMBER, RoomsErrors.PUBLISH_NOT_ALLOWED, ContactsErrors.BLOCKED, MessagesErrors.MESSAGE_NOT_ENCRYPTED, MessagesErrors.MESSAGE_EMPTY, MessagesErrors.MESSAGE_TOO_LONG, MessagesErrors.REPLY_TO_NOT_FOUND, RoomsErrors.MENTION_ROOM_NOT_ALLOWED, MessagesErrors.MESSAGE_REQUEST_LIMIT, ...BODY_ERRORS) },
    },
    handler: async (request, reply) => {
      const posted = await messages.post(principalOf(request), request.params.roomId, request.body, { ip: request.ip, afterAnswer: afterAnswerOf(reply) });
      return reply.type('application/json; charset=utf-8').send(JSON.stringify(posted.id));
    },
  });

  app.get('/api/messages/:roomId', {
    schema: {
      tags,
      security,
      summary: 'A page of the room\'s messages, newest first, by cursor in either direction',
      params: room,
      querystring: MessagesQuerySchema,
      response: { 200: MessagesPageSchema, ...authedErrors(RoomsErrors.ROOM_NOT_FOUND, MessagesErrors.CURSOR_CONFLICT) },
    },
    handler: async (request) => messageReading.read(principalOf(request), request.params.roomId, request.query),
  });
};
