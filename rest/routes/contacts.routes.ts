import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { RouteOptions } from '../route-options.js';
import { IdParam, NoContentSchema } from '../../src/platform/common.schemas.js';
import {
  AnswerRequestQuerySchema,
  ConnectionDtoSchema,
  ConnectionRequestDtoSchema,
  ConnectionRequestQuerySchema,
  IncomingCallsQuerySchema,
  IncomingCallsSettingSchema,
} from '../../src/contacts/contacts.schemas.js';
import { pagedSchema, pagingQuery } from '../../src/platform/common.schemas.js';
import { UserDtoSchema } from '../../src/users/users.schemas.js';
import { principalOf } from '../auth.js';
import { authedErrors } from '../responses.js';
import { CommonErrors } from '../../src/platform/common.errors.js';
import { ContactsErrors } from '../../src/contacts/contacts.errors.js';

export const contactsRoutes: FastifyPluginAsyncZod<RouteOptions> = async (app, { services }) => {
  const { contacts } = services;
  const tags = ['Contacts'];
  const security = [{ bearerAuth: [] }];

  app.get('/api/users/connection-requests', {
    schema: {
      tags,
      security,
      summary: 'Connection requests sent to and by the caller, newest first, answered or not',
      querystring: pagingQuery(100, 1000),
      response: { 200: pagedSchema(ConnectionRequestDtoSchema, 'PagedModelUserConnectionRequestDto'), ...authedErrors() },
    },
    handler: async (request) => contacts.listRequests(principalOf(request), request.query.pageSize, request.query.currentPage),
  });

  app.post('/api/users/connection-requests', {
    schema: {
      tags,
      security,
      summary: 'Ask a user to connect, or invite someone by SMS or e-mail',
      description:
        'At least one of email, phone, recipientId. An existing user gets `contact.request` (a push when offline); anyone else an invitation. 400 for an invalid email or phone, an existing request or connection, oneself, a block either way, or a message over 128 characters; 401 for an unknown recipientId.\n\n' +
        'A request by phone or email answers 204 alike whether or not the address has an account: an invitation is a fixed text naming the sender by display name only (never their number, never `customMessage`, which the invitee sees in the app after signing up). Requests by phone or email are limited per member (CONTACT_INVITES_PER_HOUR, CONTACT_INVITES_PER_DAY, counted whether or not an account exists): 429 TOO_MANY_CONTACT_INVITES with Retry-After. Invitation texts spend from SMS budgets of their own, apart from sign-in codes\'.',
      querystring: ConnectionRequestQuerySchema,
      response: { 204: NoContentSchema, ...authedErrors(ContactsErrors.RECIPIENT_REQUIRED, ContactsErrors.EMAIL_INVALID, CommonErrors.PHONE_INVALID, ContactsErrors.REQUEST_TO_SELF, ContactsErrors.BLOCKED, ContactsErrors.ALREADY_CONNECTED, ContactsErrors.REQUEST_EXISTS, ContactsErrors.RECIPIENT_UNKNOWN, ContactsErrors.TOO_MANY_CONTACT_INVITES, CommonErrors.PHONE_COUNTRY_NOT_ALLOWED, CommonErrors.SMS_UNAVAILABLE) },
    },
    handler: async (request, reply) => {
      await contacts.sendRequest(principalOf(request), request.query);
      return reply.code(204).send();
    },
  });

  app.post('/api/users/connection-requests/incoming/:userConnectionRequestId', {
    schema: {
      tags,
      security,
      summary: 'Accept or decline a request addressed to the caller',
      description: 'Accept connects the two (the sender gets `contact.accepted`); decline may carry a reason, and with block=true also blocks the sender with it. 400 when the request does not exist, is not addressed to the caller, or was answered.',
      params: z.object({ userConnectionRequestId: IdParam }),
      querystring: AnswerRequestQuerySchema,
      response: { 200: UserDtoSchema, ...authedErrors(ContactsErrors.REQUEST_NOT_FOUND, ContactsErrors.REQUEST_ALREADY_ANSWERED, ContactsErrors.ACCEPT_WITH_BLOCK) },
    },
    handler: async (request) => contacts.answer(principalOf(request), request.params.userConnectionRequestId, request.query),
  });

  app.get('/api/users/connections', {
    schema: {
      tags,
      security,
      summary: 'The caller\'s connections, newest first',
      querystring: pagingQuery(100, 1000),
      response: { 200: pagedSchema(ConnectionDtoSchema, 'PagedModelUserConnectionDto'), ...authedErrors() },
    },
    handler: async (request) => contacts.listConnections(principalOf(request), request.query.pageSize, request.query.currentPage),
  });

  app.delete('/api/users/connections/:userId', {
    schema: {
      tags,
      security,
      summary: 'Remove a connection',
      params: z.object({ userId: IdParam }),
      response: { 204: NoContentSchema, ...authedErrors(ContactsErrors.NOT_CONNECTED) },
    },
    handler: async (request, reply) => {
      await contacts.removeConnection(principalOf(request), request.params.userId);
      return reply.code(204).send();
    },
  });

  const callParams = z.object({ targetUserId: IdParam });
  app.get('/api/users/connections/:targetUserId/disable-incoming-calls', {
    schema: {
      tags,
      security,
      summary: 'Whether the caller refuses incoming calls from this connection',
      description: '400 when the two users are not connected.',
      params: callParams,
      response: { 200: IncomingCallsSettingSchema, ...authedErrors(ContactsErrors.NOT_CONNECTED) },
    },
    handler: async (request) => contacts.incomingCallsDisabled(principalOf(request), request.params.targetUserId),
  });

  app.post('/api/users/connections/:targetUserId/disable-incoming-calls', {
    schema: {
      tags,
      security,
      summary: 'Refuse or allow incoming calls from this connection',
      description: '400 when the two users are not connected.',
      params: callParams,
      querystring: IncomingCallsQuerySchema,
      response: { 200: IncomingCallsSettingSchema, ...authedErrors(ContactsErrors.NOT_CONNECTED) },
    },
    handler: async (request) => contacts.setIncomingCallsDisabled(principalOf(request), request.params.targetUserId, request.query.disableIncomingCalls),
  });
};
