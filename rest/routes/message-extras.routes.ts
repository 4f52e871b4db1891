import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { RouteOptions } from '../route-options.js';
import { IdParam, LanguageParam, NoContentSchema } from '../../src/platform/common.schemas.js';
import {
  CommentSchema,
  DeleteMessageQuerySchema,
  EditMessageSchema,
  MessageDtoSchema,
  MessageEditsSchema,
  MessageReadersSchema,
  MessagesPageSchema,
  MessagesQuerySchema,
  PostTranslationsSchema,
  ReactionParamsSchema,
  TldrRequestedSchema,
} from '../../src/messages/messages.schemas.js';
import { principalOf } from '../auth.js';
import { BODY_ERRORS, authedErrors } from '../responses.js';
import { MessagesErrors } from '../../src/messages/messages.errors.js';
import { RoomsErrors } from '../../src/rooms/rooms.errors.js';
import { SummariesErrors } from '../../src/summaries/summaries.errors.js';

/** Comments and translations: routes keyed by a message id. */
export const messageExtrasRoutes: FastifyPluginAsyncZod<RouteOptions> = async (app, { services }) => {
  const { messages, messageReading, messageChanges, reactions } = services;
  const tags = ['Messages'];
  const security = [{ bearerAuth: [] }];
  const message = z.object({ messageId: IdParam });

  // The translation body is the text itself (spec): text/plain here, or a JSON string.
  app.addContentTypeParser('text/plain', { parseAs: 'string' }, (_request, body, done) => done(null, body));

  app.put('/api/messages/:messageId/translations/:language', {
    schema: {
      tags,
      security,
      summary: 'Set or remove one language version of a broadcast post',
      description:
        'Body: the text (text/plain, or a JSON string); an empty body removes that language. Only the room\'s creator or an admin, or a site administrator; only a supported language other than the post\'s original one. The text is cleaned as a posted message is. No push and no socket event follow.',
      params: z.object({ messageId: IdParam, language: LanguageParam }),
      body: z.string().max(200_000).nullish(),
      response: { 200: PostTranslationsSchema, ...authedErrors(MessagesErrors.MESSAGE_NOT_FOUND, MessagesErrors.NOT_A_BROADCAST_POST, MessagesErrors.TRANSLATION_NOT_ALLOWED, RoomsErrors.LANGUAGE_NOT_SUPPORTED, RoomsErrors.ORIGINAL_LANGUAGE, MessagesErrors.MESSAGE_TOO_LONG, ...BODY_ERRORS) },
    },
    handler: async (request) => messageReading.translate(principalOf(request), request.params.messageId, request.params.language, request.body ?? ''),
  });

  app.post('/api/messages/:messageId/tldr', {
    schema: {
      tags,
      security,
      summary: 'Queue a summary of the conversation around this message',
      description:
        'Answers 202 at once; the summary arrives as `chat.tldr-ready` on the caller\'s devices. The caller must be an enabled member; not in end-to-end encrypted rooms (400).',
      params: message,
      response: { 202: TldrRequestedSchema, ...authedErrors(MessagesErrors.MESSAGE_NOT_FOUND, RoomsErrors.NOT_A_MEMBER, SummariesErrors.TLDR_NOT_IN_E2EE) },
    },
    handler: async (request, reply) => reply.code(202).send(await services.summaries.request(principalOf(request), request.params.messageId)),
  });

  app.post('/api/messages/:messageId/comments', {
    schema: {
      tags,
      security,
      summary: 'Comment on a message, where the room has comments enabled',
      description: 'Any enabled member may comment (also where participants may not post). Members\' sockets get `message.new` with `parentId` set.',
      params: message,
      body: CommentSchema,
      response: { 200: MessageDtoSchema, ...authedErrors(MessagesErrors.MESSAGE_NOT_FOUND, RoomsErrors.NOT_A_MEMBER, MessagesErrors.COMMENTS_DISABLED, MessagesErrors.MESSAGE_NOT_ENCRYPTED, MessagesErrors.MESSAGE_EMPTY, MessagesErrors.MESSAGE_TOO_LONG, ...BODY_ERRORS) },
    },
    handler: async (request) => messages.comment(principalOf(request), request.params.messageId, request.body, { ip: request.ip }),
  });

  app.get('/api/messages/:messageId/comments', {
    schema: {
      tags,
      security,
      summary: 'A message\'s comments, newest first, by cursor',
      params: message,
      querystring: MessagesQuerySchema,
      response: { 200: MessagesPageSchema, ...authedErrors(MessagesErrors.MESSAGE_NOT_FOUND, RoomsErrors.ROOM_NOT_FOUND, MessagesErrors.CURSOR_CONFLICT) },
    },
    handler: async (request) => messageReading.readComments(principalOf(request), request.params.messageId, request.query),
  });

  app.patch('/api/messages/:messageId', {
    schema: {
      tags,
      security,
      summary: 'Edit your message',
      description:
        'Its author, while an enabled member, within MESSAGE_EDIT_WINDOW (48 hours) of posting. Cleaned as a post is; ciphertext in an end-to-end encrypted room. The text before is kept (GET …/edits); a broadcast post\'s translations are dropped (they translated the old text). Members\' sockets get `message.edited`; nothing is pushed.',
      params: message,
      body: EditMessageSchema,
      response: {
        200: MessageDtoSchema,
        ...authedErrors(MessagesErrors.MESSAGE_NOT_FOUND, RoomsErrors.NOT_A_MEMBER, MessagesErrors.EDIT_NOT_ALLOWED, MessagesErrors.EDIT_WINDOW_PASSED, MessagesErrors.MESSAGE_DELETED, MessagesErrors.MESSAGE_NOT_ENCRYPTED, MessagesErrors.MESSAGE_EMPTY, MessagesErrors.MESSAGE_TOO_LONG, ...BODY_ERRORS),
      },
    },
    handler: async (request) => messageChanges.edit(principalOf(request), request.params.messageId, request.body),
  });

  app.get('/api/messages/:messageId/edits', {
    schema: {
      tags,
      security,
      summary: 'A message\'s versions, oldest first (the last is its text now)',
      params: message,
      response: { 200: MessageEditsSchema, ...authedErrors(MessagesErrors.MESSAGE_NOT_FOUND, RoomsErrors.ROOM_NOT_FOUND) },
    },
    handler: async (request) => messageChanges.versions(principalOf(request), request.params.messageId),
  });

  app.delete('/api/messages/:messageId', {
    schema: {
      tags,
      security,
      summary: 'Delete a message for everyone, or hide it for yourself',
      description:
        'For everyone: its author within MESSAGE_DELETE_WINDOW (48 hours), the room\'s creator or an admin, or a site administrator, at any time. A tombstone stays (`deleted: true`): text, translations, card, attachments and their files go, and a ticket for one stops opening it. Members\' sockets get `message.deleted`. `scope=me` hides it for the caller only.',
      params: message,
      querystring: DeleteMessageQuerySchema,
      response: { 204: NoContentSchema, ...authedErrors(MessagesErrors.MESSAGE_NOT_FOUND, RoomsErrors.ROOM_NOT_FOUND, MessagesErrors.DELETE_NOT_ALLOWED, MessagesErrors.MESSAGE_DELETED) },
    },
    handler: async (request, reply) => {
      await messageChanges.delete(principalOf(request), request.params.messageId, request.query.scope);
      return reply.code(204).send();
    },
  });

  for (const [method, summary] of [
    ['put', 'React to a message with one emoji'],
    ['delete', 'Take your reaction back'],
  ] as const) {
    app.route({
      method: method.toUpperCase() as 'PUT' | 'DELETE',
      url: '/api/messages/:messageId/reactions/:emoji',
      schema: {
        tags,
        security,
        summary,
        description:
          'Members who may read the message (a broadcast room\'s followers too, unless its admins turned reactions off); one emoji (a single grapheme, URL-encoded), at most 3 different ones per member per message. Members\' sockets get `message.reactions` with the new counts; the author gets `message.reaction` (an alert push when offline, collapsed per message; never for their own reaction). Putting one already there, or taking back one that is not, changes nothing.',
        params: ReactionParamsSchema,
        response: {
          204: NoContentSchema,
          ...authedErrors(MessagesErrors.MESSAGE_NOT_FOUND, RoomsErrors.ROOM_NOT_FOUND, MessagesErrors.EMOJI_INVALID, MessagesErrors.REACTIONS_DISABLED, MessagesErrors.MESSAGE_DELETED, ...(method === 'put' ? [MessagesErrors.TOO_MANY_REACTIONS] : [])),
        },
      },
      handler: async (request, reply) => {
        // Cast: the params schema above checked both (the route is declared in a loop, so its types are not inferred).
        const { messageId, emoji } = request.params as { messageId: string; emoji: string };
        if (method === 'put') await reactions.react(principalOf(request), messageId, emoji);
        else await reactions.unreact(principalOf(request), messageId, emoji);
        return reply.code(204).send();
      },
    });
  }

  app.get('/api/messages/:messageId/readers', {
    schema: {
      tags,
      security,
      summary: 'Who has read your message, and when',
      description:
        'Its author only, in a direct chat or a group of up to 256 members, with read receipts on (PATCH /api/users/me `readReceipts`): members whose read mark reached the message, leaving out those with read receipts off.',
      params: message,
      response: { 200: MessageReadersSchema, ...authedErrors(MessagesErrors.MESSAGE_NOT_FOUND, RoomsErrors.ROOM_NOT_FOUND, MessagesErrors.READ_RECEIPTS_NOT_HERE, MessagesErrors.READ_RECEIPTS_OFF) },
    },
    handler: async (request) => messageReading.readers(principalOf(request), request.params.messageId),
  });
};
