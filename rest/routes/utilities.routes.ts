import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { RouteOptions } from '../app.js';
import { principalOf } from '../auth.js';
import { authedErrors } from '../responses.js';

const GeoLookupSchema = z
  .object({
    ip: z.string(),
    geoLocation: z
      .object({ latitude: z.number(), longitude: z.number(), country: z.string().nullable().optional(), city: z.string().nullable().optional() })
      .nullable()
      .describe('Null for private, loopback and unknown addresses'),
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
