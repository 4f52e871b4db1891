import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { RouteOptions } from '../route-options.js';
import { IdParam, NoContentSchema } from '../../src/platform/common.schemas.js';
import { DeviceDtoSchema, PushTokenUpdateSchema, VoipPushTokenUpdateSchema } from '../../src/devices/devices.schemas.js';
import { principalOf } from '../auth.js';
import { BODY_ERRORS, authedErrors } from '../responses.js';
import { DevicesErrors } from '../../src/devices/devices.errors.js';

export const devicesRoutes: FastifyPluginAsyncZod<RouteOptions> = async (app, { services }) => {
  const { devices } = services;
  const tags = ['Devices'];
  const security = [{ bearerAuth: [] }];

  app.get('/api/devices', {
    schema: { tags, security, summary: 'The caller\'s active devices, newest first', response: { 200: z.array(DeviceDtoSchema), ...authedErrors() } },
    handler: async (request) => devices.list(principalOf(request)),
  });

  app.delete('/api/devices/:deviceId', {
    schema: {
      tags,
      security,
      summary: 'Revoke one of the caller\'s devices',
      description: 'Its access and refresh tokens and its sockets stop working at once. 400 when it is not an active device of the caller.',
      params: z.object({ deviceId: IdParam }),
      response: { 204: NoContentSchema, ...authedErrors(DevicesErrors.DEVICE_NOT_FOUND) },
    },
    handler: async (request, reply) => {
      await devices.revoke(principalOf(request), request.params.deviceId);
      return reply.code(204).send();
    },
  });

  app.put('/api/devices/push-token', {
    schema: {
      tags,
      security,
      summary: 'Set the push token of the calling device',
      body: PushTokenUpdateSchema,
      response: { 204: NoContentSchema, ...authedErrors(...BODY_ERRORS) },
    },
    handler: async (request, reply) => {
      await devices.setPushToken(principalOf(request), request.body);
      return reply.code(204).send();
    },
  });

  app.put('/api/devices/voip-push-token', {
    schema: {
      tags,
      security,
      summary: 'Set the VoIP push token of the calling device (rings it for incoming calls)',
      body: VoipPushTokenUpdateSchema,
      response: { 204: NoContentSchema, ...authedErrors(...BODY_ERRORS) },
    },
    handler: async (request, reply) => {
      await devices.setVoipPushToken(principalOf(request), request.body);
      return reply.code(204).send();
    },
  });
};
