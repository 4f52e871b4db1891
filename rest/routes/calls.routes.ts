import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AppContext } from '../../src/context.js';
import { CallDtoSchema, CallSignalSchema, CallStartSchema, IceServersSchema } from '../../src/schemas/calls.schemas.js';
import { IdParam, NoContentSchema } from '../../src/schemas/common.schemas.js';
import { principalOf } from '../auth.js';
import { BODY_ERRORS, authedErrors } from '../responses.js';

export const callsRoutes: FastifyPluginAsyncZod<{ ctx: AppContext }> = async (app, { ctx }) => {
  const { calls, ice } = ctx.services;
  const tags = ['Calls'];
  const security = [{ bearerAuth: [] }];
  const params = z.object({ callId: IdParam });

  app.get('/api/calls/ice-servers', {
    schema: {
      tags,
      security,
      summary: 'STUN and TURN servers with short-lived TURN credentials',
      description: 'TURN REST API credentials: username `<expiry-unix-seconds>:<userId>`, credential base64(HMAC-SHA1(secret, username)).',
      response: { 200: IceServersSchema, ...authedErrors() },
    },
    handler: async (request) => ice.servers(principalOf(request)),
  });

  app.post('/api/calls', {
    schema: {
      tags,
      security,
      summary: 'Call a user: rings every device of theirs',
      description:
        'The callee gets `call.incoming` on every device (a VoIP push where offline). 400 CALL_NOT_ALLOWED when the two are neither connected nor share a room, when either blocked the other, or when the callee disabled incoming calls from the caller. 409 DEVICE_BUSY when this device is already in a call.',
      body: CallStartSchema,
      response: { 200: CallDtoSchema, ...authedErrors(409, ...BODY_ERRORS) },
    },
    handler: async (request) => calls.start(principalOf(request), request.body),
  });

  app.get('/api/calls/:callId', {
    schema: { tags, security, summary: 'One call of the caller', params, response: { 200: CallDtoSchema, ...authedErrors() } },
    handler: async (request) => calls.get(principalOf(request), request.params.callId),
  });

  app.post('/api/calls/:callId/answer', {
    schema: {
      tags,
      security,
      summary: 'Answer on this device; the first device to answer wins',
      description: 'Everyone in the call gets `call.answered`; the callee\'s other devices stop ringing. 409 CALL_ALREADY_ANSWERED when another device was first.',
      params,
      response: { 200: CallDtoSchema, ...authedErrors(409) },
    },
    handler: async (request) => calls.answer(principalOf(request), request.params.callId),
  });

  app.post('/api/calls/:callId/reject', {
    schema: { tags, security, summary: 'Decline a ringing call', params, response: { 200: CallDtoSchema, ...authedErrors() } },
    handler: async (request) => calls.reject(principalOf(request), request.params.callId),
  });

  app.post('/api/calls/:callId/end', {
    schema: {
      tags,
      security,
      summary: 'Hang up (or cancel while ringing)',
      description: 'Ending an ended call changes nothing.',
      params,
      response: { 200: CallDtoSchema, ...authedErrors() },
    },
    handler: async (request) => calls.end(principalOf(request), request.params.callId),
  });

  app.post('/api/calls/:callId/signal', {
    schema: {
      tags,
      security,
      summary: 'Relay an SDP offer/answer or ICE candidate to the other device of the call',
      description: 'Also available on the socket as `call.signal`. The other device gets a `call.signal` event.',
      params,
      body: CallSignalSchema,
      response: { 204: NoContentSchema, ...authedErrors(...BODY_ERRORS) },
    },
    handler: async (request, reply) => {
      await calls.signal(principalOf(request), request.params.callId, request.body);
      return reply.code(204).send();
    },
  });
};
