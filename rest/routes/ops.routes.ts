import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Registry } from 'prom-client';
import type { RouteOptions } from '../route-options.js';
import { CommonErrors } from '../../src/platform/common.errors.js';
import { sendError } from '../error-handler.js';
import { documentOf } from '../openapi.js';
import { once } from '../../src/platform/platform.js';
import { socketProtocolDocument } from '../../src/socket-protocol.js';

const CHECK_TIMEOUT_MS = 2_000;

/** Liveness, readiness, metrics, the OpenAPI documents and the socket protocol's AsyncAPI document; left out of the OpenAPI document itself. */
export const opsRoutes: FastifyPluginAsyncZod<RouteOptions & { metrics: Registry }> = async (app, { services, metrics, config }) => {
  app.get('/healthz', { schema: { hide: true }, config: { standalone: true } }, async () => ({ status: 'ok' }));

  app.get('/readyz', { schema: { hide: true }, config: { standalone: true } }, async (request, reply) => {
    const checks = await services.ops.health(CHECK_TIMEOUT_MS);
    if (checks.mongodb === 'ok' && checks.redis === 'ok') return { status: 'ready', checks };
    return sendError(request, reply, CommonErrors.NOT_READY({ details: [checks] }));
  });

  // Metrics belong on the operations port (OPS_PORT); the public port serves them only when asked to.
  if (config.METRICS_ON_PUBLIC_PORT) {
    app.get('/metrics', { schema: { hide: true }, config: { standalone: true } }, async (_request, reply) => {
      reply.type(metrics.contentType);
      return metrics.metrics();
    });
  }

  const full = () => app.swagger();
  // The apps' document: what an app's server calls (payments, bot cards) and the keys it verifies with.
  const forApps = (path: string) => path.startsWith('/app-api/v1/') || path.startsWith('/bot-api/v1/') || path === '/.well-known/jwks.json';
  // Cast: buildApp gives the document exactly this info.
  const api = once(() => documentOf(full(), (path) => !forApps(path), full().info as { title: string; version: string; description: string }));
  const appApi = once(() =>
    documentOf(full(), forApps, {
      title: 'Chat platform for apps: /app-api/v1, /bot-api/v1',
      version: '1.0.0',
      description: 'What apps\' servers call: the payments interface with a payments key (Authorization: Bearer bpk_…), the bot interface with a room bot token (bbt_…), and the keys that verify what the service signs. Every error answer is an ErrorResponse.',
    }),
  );
  app.get('/v3/api-docs/api-traffic', { schema: { hide: true }, config: { standalone: true } }, async () => api());
  app.get('/v3/api-docs/app-api', { schema: { hide: true }, config: { standalone: true } }, async () => appApi());
  // The device socket protocol (AsyncAPI 3), generated from the schemas the hub and the emitters use.
  const socketProtocol = once(() => socketProtocolDocument({ version: full().info.version }));
  app.get('/v3/asyncapi/device-socket', { schema: { hide: true }, config: { standalone: true } }, async () => socketProtocol());
};
