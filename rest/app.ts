import { randomUUID } from 'node:crypto';
import fastifySwagger from '@fastify/swagger';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import {
  jsonSchemaTransform,
  jsonSchemaTransformObject,
  serializerCompiler,
  validatorCompiler,
  type ZodTypeProvider,
} from 'fastify-type-provider-zod';
import type { Services } from '../src/composition.js';
import { publicBaseUrl, type Config } from '../src/platform/config.js';
import type { Logger } from '../src/platform/logger.js';
import { redactUrl } from '../src/platform/logger.js';
import { principalOf, requireAccessToken } from './auth.js';
import { installCors } from './cors.js';
import { refuseWhileAway } from './dependencies.js';
import type { RouteOptions } from './route-options.js';
import { installErrorHandling, sendError, shownPath } from './error-handler.js';
import { finishDocument } from './openapi.js';
import { errorResponses } from './responses.js';
import { attachmentsRoutes } from './routes/attachments.routes.js';
import { authRoutes } from './routes/auth.routes.js';
import { biometricRoutes } from './routes/biometric.routes.js';
import { blocksRoutes } from './routes/blocks.routes.js';
import { contactsRoutes } from './routes/contacts.routes.js';
import { mediaRoutes } from './routes/media.routes.js';
import { messageExtrasRoutes } from './routes/message-extras.routes.js';
import { messagesRoutes } from './routes/messages.routes.js';
import { roomsRoutes } from './routes/rooms.routes.js';
import { avatarFileRoutes, avatarRoutes } from './routes/avatar.routes.js';
import { chatStatusRoutes } from './routes/chat-status.routes.js';
import { walletsRoutes } from './routes/wallets.routes.js';
import { e2eeRoutes } from './routes/e2ee.routes.js';
import { appConsoleRoutes } from './routes/apps/console.routes.js';
import { appMembersRoutes } from './routes/apps/members.routes.js';
import { appInvocationsRoutes } from './routes/apps/invocations.routes.js';
import { appKeysRoutes, botApiRoutes } from './routes/apps/bot.routes.js';
import { appApiRoutes } from './routes/apps/payments.routes.js';
import { speechRoutes } from './routes/speech.routes.js';
import { callsRoutes } from './routes/calls.routes.js';
import { devicesRoutes } from './routes/devices.routes.js';
import { createMetrics } from './metrics.js';
import type { Registry } from 'prom-client';
import { createProcessMetrics } from '../src/platform/ops-server.js';
import { idempotencyHooks } from './idempotency.js';
import { opsRoutes } from './routes/ops.routes.js';
import { presenceRoutes } from './routes/presence.routes.js';
import { sessionRoutes } from './routes/session.routes.js';
import { usersRoutes } from './routes/users.routes.js';
import { accountsRoutes, exportFileRoutes } from './routes/accounts.routes.js';
import { moderationRoutes } from './routes/moderation.routes.js';
import { utilitiesRoutes } from './routes/utilities.routes.js';
import { CommonErrors } from '../src/platform/common.errors.js';
import { consoleRoutes } from './console/console.plugin.js';
import { AppError } from '../src/platform/errors.js';

const REQUEST_ID = /^[A-Za-z0-9._-]{1,64}$/;

declare module 'fastify' {
  interface FastifyInstance {
    /** Every route registered, as "METHOD /path/:param" (HEAD left out). */
    routeTable: string[];
  }
}

/** The REST api, built without listening (tests use inject() or listen on port 0). */
/** `metrics`: the process's registry (the operations port serves it); a registry of its own when not given. */
export async function buildApp({ services, config, logger, metrics: registry = createProcessMetrics() }: { services: Services; config: Config; logger: Logger; metrics?: Registry }): Promise<FastifyInstance> {
  const routeOptions: RouteOptions = { services, config };
  const app = Fastify({
    // Cast: pino's Logger is Fastify's logger; their declared types differ only in generics.
    loggerInstance: logger.child({ role: 'api' }) as FastifyBaseLogger,
    bodyLimit: config.BODY_LIMIT,
    // Behind a load balancer set TRUST_PROXY_HOPS; otherwise a client could claim any address.
    trustProxy: (_address: string, hop: number) => hop < config.TRUST_PROXY_HOPS,
    requestIdHeader: false,
    genReqId: (request) => {
      const given = request.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
    // One line per request comes from the onResponse hook below, with secret query values redacted.
    logController: new LogController({ disableRequestLogging: true }),
    ajv: { customOptions: { coerceTypes: false } },
    // Ticket links carry a JWT in the path.
    routerOptions: { maxParamLength: 2048 },
    // Errors the router raises before any route runs (a bad URL encoding, an over-long parameter).
    frameworkErrors: (error, request, reply) => {
      const status = typeof error.statusCode === 'number' && error.statusCode >= 400 && error.statusCode < 500 ? error.statusCode : 400;
      void sendError(request, reply, new AppError(status, CommonErrors.BAD_URL.code, CommonErrors.BAD_URL.message));
    },
  }).withTypeProvider<ZodTypeProvider>();

  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  // In tests, an error answer whose code the operation does not document fails loudly.
  // Before the error handling: the not-found handler (which answers a preflight) takes the hooks added before it.
  installCors(app, config.CORS_ORIGINS);
  installErrorHandling(app, { checkDocumentedCodes: config.NODE_ENV === 'test', dependencies: services.ops.dependencies });
  app.decorateRequest('principal', null);
  app.decorateRequest('idempotencyKey', null);
  const routeTable: string[] = [];
  app.decorate('routeTable', routeTable);
  app.addHook('onRoute', (route) => {
    for (const method of [route.method].flat()) if (method !== 'HEAD') routeTable.push(`${method} ${route.url}`);
    // Any request that can carry a body can be too large (BODY_LIMIT, or the route's own): 413 is
    // documented on every such operation, whether or not its schema takes a body.
    const response = route.schema?.response as Record<number, unknown> | undefined;
    if (response && !response[413] && [route.method].flat().some((method) => ['POST', 'PUT', 'PATCH', 'DELETE'].includes(method))) {
      Object.assign(response, { 413: errorResponses(CommonErrors.PAYLOAD_TOO_LARGE)[413] });
    }
  });

  // JSON bodies: an empty body counts as none (POST routes without a body), anything unparsable is a coded 400.
  // Only JSON is accepted (multipart joins with attachments); anything else is a coded 415.
  app.removeContentTypeParser(['application/json', 'text/plain']);
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, text, done) => {
    const raw = typeof text === 'string' ? text : text.toString('utf8');
    if (raw.trim() === '') return done(null, undefined);
    try {
      done(null, JSON.parse(raw));
    } catch {
      done(CommonErrors.MALFORMED_JSON(), undefined);
    }
  });

  const { registry: metrics, durations } = createMetrics(services, registry);

  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });
  refuseWhileAway(app, services.ops.dependencies);
  app.addHook('onResponse', async (request, reply) => {
    const route = request.routeOptions.url ?? 'unmatched';
    durations.observe({ method: request.method, route, status: String(reply.statusCode) }, reply.elapsedTime / 1000);
    request.log.info(
      { ip: request.ip, method: request.method, url: redactUrl(`${shownPath(request)}${request.url.includes('?') ? request.url.slice(request.url.indexOf('?')) : ''}`), status: reply.statusCode, ms: Math.round(reply.elapsedTime * 10) / 10 },
      'request',
    );
  });

  await app.register(fastifySwagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Chat platform /api',
        version: '1.0.99',
        description: 'The member-facing REST interface. Every error answer is an ErrorResponse.',
      },
      // Where clients send their requests: generators take it as the default base URL.
      servers: [{ url: publicBaseUrl(config), description: 'This deployment (PUBLIC_BASE_URL)' }],
      components: { securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' }, paymentsKey: { type: 'http', scheme: 'bearer', bearerFormat: 'bpk_…' }, botToken: { type: 'http', scheme: 'bearer', bearerFormat: 'bbt_…' } } },
    },
    transform: jsonSchemaTransform,
    transformObject: (input) => finishDocument(jsonSchemaTransformObject(input)),
  });

  await app.register(opsRoutes, { ...routeOptions, metrics });
  await app.register(authRoutes, routeOptions);
  await app.register(mediaRoutes, routeOptions);
  await app.register(exportFileRoutes, routeOptions);
  await app.register(avatarFileRoutes, routeOptions);
  await app.register(appKeysRoutes, routeOptions);
  await app.register(botApiRoutes, routeOptions);
  await app.register(appApiRoutes, routeOptions);
  // The developer console and the administrators' pages: HTML, with a browser session of their own.
  await app.register(consoleRoutes, routeOptions);
  await app.register(async (authed) => {
    authed.addHook('onRequest', requireAccessToken(services.auth));
    // The administrators' routes refuse a member before the body is read or checked: the same 401
    // whatever they sent (the services check again; this only comes first).
    authed.addHook('onRequest', async (request) => {
      if (!request.routeOptions.url?.startsWith('/api/admin/')) return;
      if (!(await services.users.isSiteAdmin(principalOf(request).userId))) throw CommonErrors.UNAUTHORIZED();
    });
    const idempotency = idempotencyHooks(services.idempotency);
    authed.addHook('preHandler', idempotency.preHandler);
    authed.addHook('onSend', idempotency.onSend);
    authed.addHook('onResponse', idempotency.onEnd);
    authed.addHook('onRequestAbort', idempotency.onEnd);
    await authed.register(sessionRoutes, routeOptions);
    await authed.register(usersRoutes, routeOptions);
    await authed.register(accountsRoutes, routeOptions);
    await authed.register(moderationRoutes, routeOptions);
    await authed.register(avatarRoutes, routeOptions);
    await authed.register(devicesRoutes, routeOptions);
    await authed.register(presenceRoutes, routeOptions);
    await authed.register(callsRoutes, routeOptions);
    await authed.register(contactsRoutes, routeOptions);
    await authed.register(blocksRoutes, routeOptions);
    await authed.register(biometricRoutes, routeOptions);
    await authed.register(roomsRoutes, routeOptions);
    await authed.register(chatStatusRoutes, routeOptions);
    await authed.register(walletsRoutes, routeOptions);
    await authed.register(e2eeRoutes, routeOptions);
    await authed.register(appConsoleRoutes, routeOptions);
    await authed.register(appMembersRoutes, routeOptions);
    await authed.register(appInvocationsRoutes, routeOptions);
    await authed.register(messagesRoutes, routeOptions);
    await authed.register(messageExtrasRoutes, routeOptions);
    await authed.register(attachmentsRoutes, routeOptions);
    await authed.register(speechRoutes, routeOptions);
    await authed.register(utilitiesRoutes, routeOptions);
  });

  await app.ready();
  return app;
}
