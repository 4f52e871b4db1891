import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { fileHeaders, onlyOnMediaHost } from '../downloads.js';
import type { RouteOptions } from '../route-options.js';

/** Ticket links (spec, rule 7): no Authorization header; the ticket in the path is the whole credential. */
export const mediaRoutes: FastifyPluginAsyncZod<RouteOptions> = async (app, { services, config }) => {
  app.get('/media/:ticket', {
    preHandler: onlyOnMediaHost(config),
    schema: {
      hide: true,
      params: z.object({ ticket: z.string().min(10).max(2048) }),
      querystring: z.object({ variant: z.enum(['original', 'thumbnail', 'poster', 'mp4']).default('original') }),
    },
    handler: async (request, reply) => {
      const file = await services.attachments.download(request.params.ticket, request.query.variant, request.headers.range);
      fileHeaders(reply, file).header('accept-ranges', 'bytes').header('cache-control', 'private, max-age=60');
      if (file.range) {
        reply.code(206).header('content-range', `bytes ${file.range.start}-${file.range.end}/${file.size}`).header('content-length', String(file.range.end - file.range.start + 1));
      } else {
        reply.header('content-length', String(file.size));
      }
      return reply.send(file.body);
    },
  });
};
