import type { FastifyInstance } from 'fastify';
import type { DependencyHealth } from '../src/platform/dependencies.js';
import { sendError } from './error-handler.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route answers without MongoDB or Redis (liveness, readiness, metrics, documents, keys). */
    standalone?: boolean;
    /** The answer shows a secret once (a token, key or webhook secret): the idempotency layer never keeps it. */
    revealsSecret?: boolean;
  }
}

/**
 * While MongoDB or Redis is away, every route that needs them is refused at once with 503, its
 * code and Retry-After, before anything runs: no request waits on a dependency known to be away,
 * and none starts a write it could not finish.
 */
export function refuseWhileAway(app: FastifyInstance, health: DependencyHealth): void {
  app.addHook('onRequest', async (request, reply) => {
    if (request.is404 || request.routeOptions.config.standalone) return undefined;
    const refusal = health.refusal();
    return refusal ? sendError(request, reply, refusal) : undefined;
  });
}
