import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { RouteOptions } from '../route-options.js';
import { principalOf } from '../auth.js';
import { authedErrors } from '../responses.js';
import { GeoLocationSchema } from '../../src/messages/messages.schemas.js';

const GeoLookupSchema = z
  .object({
    ip: z.string(),
    geoLocation: GeoLocationSchema.nullable().describe('Null for private, loopback and unknown addresses'),
  })
  .meta({ id: 'GeoLookup' });

export const utilitiesRoutes: FastifyPluginAsyncZod<RouteOptions> = async (app, { services }) => {
  app.get('/api/utilities/geo-location', {
    schema: {
      tags: ['Utilities'],
      security: [{ bearerAuth: [] }],
      summary: 'Where the caller\'s IP address is, from the offline GeoLite2 database',
      response: { 200: GeoLookupSchema, ...authedErrors() },
    },
    handler: async (request) => {
      principalOf(request);
      return { ip: request.ip, geoLocation: services.geo.locate(request.ip) };
    },
  });
};
