import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Registry } from 'prom-client';
import type { AppContext } from '../../src/context.js';
import { sendError } from '../error-handler.js';

const CHECK_TIMEOUT_MS = 2_000;

function withTimeout<T>(promise: Promise<T>): Promise<T> {
  return Promise.race([promise, new Promise<T>((_, reject) => setTimeout(() => reject(new Error('timeout')), CHECK_TIMEOUT_MS).unref())]);
}

/** Liveness, readiness, metrics and the OpenAPI document; left out of the OpenAPI document itself. */
export const opsRoutes: FastifyPluginAsyncZod<{ ctx: AppContext; metrics: Registry }> = async (app, { ctx, metrics }) => {
  app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }));

  app.get('/readyz', { schema: { hide: true } }, async (request, reply) => {
    const [mongodb, redis] = await Promise.allSettled([withTimeout(ctx.db.command({ ping: 1 })), withTimeout(ctx.redis.ping())]);
    const checks = { mongodb: mongodb.status === 'fulfilled' ? 'ok' : 'down', redis: redis.status === 'fulfilled' ? 'ok' : 'down' };
    if (checks.mongodb === 'ok' && checks.redis === 'ok') return { status: 'ready', checks };
    return sendError(request, reply, 503, 'NOT_READY', 'A dependency does not answer', [checks]);
  });

  app.get('/metrics', { schema: { hide: true } }, async (_request, reply) => {
    reply.type(metrics.contentType);
    return metrics.metrics();
  });

  app.get('/v3/api-docs/api-traffic', { schema: { hide: true } }, async () => app.swagger());
};
