import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { RouteOptions } from '../route-options.js';
import { IdParam, NoContentSchema } from '../../src/platform/common.schemas.js';
import { pagedSchema, pagingQuery } from '../../src/platform/common.schemas.js';
import { MarkReadSchema, RoomStatusSchema } from '../../src/chat-status/chat-status.schemas.js';
import { ENCRYPTED_PREVIEW_LIMIT, PREVIEW_LENGTH } from '../../src/chat-status/chat-status.service.js';
import { principalOf } from '../auth.js';
import { OPTIONAL_BODY } from '../openapi.js';
import { BODY_ERRORS, authedErrors } from '../responses.js';
import { MessagesErrors } from '../../src/messages/messages.errors.js';
import { RoomsErrors } from '../../src/rooms/rooms.errors.js';

/** The chat list at start-up, and the read mark its unread counts come from. */
export const chatStatusRoutes: FastifyPluginAsyncZod<RouteOptions> = async (app, { services }) => {
  const { chatStatus, messageReading } = services;
  const tags = ['Rooms'];
  const security = [{ bearerAuth: [] }];

  app.get('/api/rooms/status', {
    schema: {
      tags,
      security,
      summary: 'The chat status snapshot: every room of the caller with its unread count, newest message, muted state and call',
      description:
        `Latest activity first (the newest message, or the room's creation). The newest message's text is cut to ${PREVIEW_LENGTH} characters (\`truncated\` says so); ` +
        `an encrypted one comes whole up to ${ENCRYPTED_PREVIEW_LIMIT} characters, else empty. Unread counts count timeline messages after the caller's read mark ` +
        '(POST /api/rooms/{roomId}/read); what the caller posts moves their mark, and a new member starts with the history read. After this call, `message.new` on the socket keeps the list current.',
      querystring: pagingQuery(100, 500),
      response: { 200: pagedSchema(RoomStatusSchema, 'PagedModelRoomStatus'), ...authedErrors() },
    },
    handler: async (request) => chatStatus.snapshot(principalOf(request), request.query.pageSize, request.query.currentPage),
  });

  app.post('/api/rooms/:roomId/read', {
    schema: {
      tags,
      security,
      summary: 'Move the caller\'s read mark: up to a message of the room\'s timeline, or (no body) up to the newest',
      description: 'The mark only moves forward; marking an older message read changes nothing. Active members only.',
      params: z.object({ roomId: IdParam }),
      body: MarkReadSchema.nullish(),
      [OPTIONAL_BODY]: true,
      response: { 204: NoContentSchema, ...authedErrors(RoomsErrors.NOT_A_MEMBER, MessagesErrors.MESSAGE_NOT_FOUND, ...BODY_ERRORS) },
    },
    handler: async (request, reply) => {
      await messageReading.markRead(principalOf(request), request.params.roomId, request.body ?? {});
      return reply.code(204).send();
    },
  });
};
