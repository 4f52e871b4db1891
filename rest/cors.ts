import type { FastifyInstance } from 'fastify';

/** What a browser on an allowed origin may send beyond the simple headers, and may read of an answer. */
const ALLOWED_HEADERS = 'authorization, content-type, idempotency-key, if-none-match, x-request-id, accept-language';
const EXPOSED_HEADERS = 'retry-after, x-request-id, idempotent-replayed, etag';
const ALLOWED_METHODS = 'GET, POST, PUT, PATCH, DELETE';

/**
 * CORS for web clients served from other origins (CORS_ORIGINS): an allowed origin gets the
 * answer's `Access-Control-Allow-Origin` and a preflight answered 204; any other origin gets
 * nothing, so the browser keeps the answer from it. No credentials mode: the api authenticates with
 * the bearer token, never a cookie, and the console (cookies) is same-origin only.
 */
export function installCors(app: FastifyInstance, origins: readonly string[]): void {
  if (origins.length === 0) return;
  const allowed = new Set(origins.map((origin) => origin.toLowerCase()));
  app.addHook('onRequest', async (request, reply) => {
    const origin = request.headers.origin;
    // Vary on every answer: a shared cache must not hand one origin's answer to another.
    reply.header('vary', 'Origin');
    if (typeof origin !== 'string' || !allowed.has(origin.toLowerCase()) || request.url.startsWith('/console')) return;
    reply.header('access-control-allow-origin', origin);
    if (request.method === 'OPTIONS' && request.headers['access-control-request-method']) {
      return reply
        .code(204)
        .header('access-control-allow-methods', ALLOWED_METHODS)
        .header('access-control-allow-headers', ALLOWED_HEADERS)
        .header('access-control-max-age', '600')
        .send();
    }
    reply.header('access-control-expose-headers', EXPOSED_HEADERS);
  });
}
