import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AppContext } from '../../src/context.js';
import { sendError } from '../error-handler.js';

const RANGE = /^bytes=(\d*)-(\d*)$/;

/** Ticket links (spec, rule 7): no Authorization header; the ticket in the path is the whole credential. */
export const mediaRoutes: FastifyPluginAsyncZod<{ ctx: AppContext }> = async (app, { ctx }) => {
  app.get('/media/:ticket', {
    schema: {
      hide: true,
      params: z.object({ ticket: z.string().min(10).max(2048) }),
      querystring: z.object({ variant: z.enum(['original', 'thumbnail', 'poster', 'mp4']).default('original') }),
    },
    handler: async (request, reply) => {
      const file = await ctx.services.attachments.openTicket(request.params.ticket, request.query.variant);
      const size = await ctx.storage.size(file.key);
      if (size === null) return sendError(request, reply, 404, 'NOT_FOUND', 'The file is gone');
      reply
        .header('content-type', file.contentType)
        .header('accept-ranges', 'bytes')
        .header('cache-control', 'private, max-age=60')
        .header('content-disposition', `inline; filename="${file.filename.replace(/["\\\r\n]/g, '_')}"`);
      const range = RANGE.exec(request.headers.range ?? '');
      if (range && (range[1] || range[2])) {
        // bytes=a-b, bytes=a- and bytes=-n (the last n bytes).
        const start = range[1] ? Number(range[1]) : Math.max(0, size - Number(range[2]));
        const end = range[1] && range[2] ? Math.min(Number(range[2]), size - 1) : size - 1;
        if (start > end || start >= size) {
          reply.header('content-range', `bytes */${size}`);
          return sendError(request, reply, 416, 'RANGE_NOT_SATISFIABLE', 'The range is outside the file');
        }
        reply.code(206).header('content-range', `bytes ${start}-${end}/${size}`).header('content-length', String(end - start + 1));
        return reply.send(await ctx.storage.read(file.key, { start, end }));
      }
      reply.header('content-length', String(size));
      return reply.send(await ctx.storage.read(file.key));
    },
  });
};
