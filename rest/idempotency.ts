import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { IdempotencyStore } from '../src/platform/idempotency.js';
import { CommonErrors } from '../src/platform/common.errors.js';

declare module 'fastify' {
  interface FastifyRequest {
    idempotencyKey: { key: string; fingerprint: string; userId: string; renewal: NodeJS.Timeout } | null;
  }
}

export const MUTATING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
/** Codes every mutating `/api` operation may answer once it takes an Idempotency-Key. */
export const IDEMPOTENCY_CODES = [CommonErrors.IDEMPOTENCY_KEY_INVALID, CommonErrors.IDEMPOTENCY_KEY_REUSED, CommonErrors.IDEMPOTENCY_KEY_IN_USE, CommonErrors.IDEMPOTENCY_ANSWER_NOT_KEPT] as const;
const MAX_STORED_BODY = 1024 * 1024;

/** What a repeat must ask to get the first answer: method, address and body (for a stream: its type and length). */
export function requestFingerprint(request: Pick<FastifyRequest, 'method' | 'url' | 'body' | 'headers'>): string {
  const body = request.body === undefined ? `${request.headers['content-type'] ?? ''}|${request.headers['content-length'] ?? ''}` : JSON.stringify(request.body);
  return createHash('sha256').update(`${request.method} ${request.url}\n${body}`).digest('base64url');
}

/** The key as sent: a bare token or a quoted string (structured fields), 1 to 255 visible ASCII characters. */
function parseKey(header: string): string {
  const key = /^"(.*)"$/.exec(header)?.[1] ?? header;
  if (!/^[\x21-\x7e]{1,255}$/.test(key)) throw CommonErrors.IDEMPOTENCY_KEY_INVALID();
  return key;
}

/**
 * The `Idempotency-Key` header on mutating `/api` calls (docs/clients/rooms-and-messages.md, "Resending safely"): the first request
 * with a key claims it; its answer (anything but a 5xx) is kept 24 hours and a repeat with the same key
 * and request gets it again (`Idempotent-Replayed: true`); the same key with another request is 400
 * `IDEMPOTENCY_KEY_REUSED`; a repeat while the first runs is 409 `IDEMPOTENCY_KEY_IN_USE`. Without the
 * header nothing changes.
 */
export function idempotencyHooks(store: IdempotencyStore) {
  return {
    async preHandler(request: FastifyRequest, reply: FastifyReply) {
      const header = request.headers['idempotency-key'];
      if (typeof header !== 'string' || !MUTATING.has(request.method) || !request.principal) return;
      const key = parseKey(header);
      const fingerprint = requestFingerprint(request);
      const userId = request.principal.userId;
      const held = await store.claim(userId, key, fingerprint);
      if (held === null) {
        // Renewed while the request runs; a process that dies stops renewing and the key is free a lease later.
        const renewal = setInterval(() => {
          store.renew(userId, key, fingerprint).catch((error: unknown) => request.log.warn({ err: error }, 'idempotency key not renewed'));
        }, (store.leaseSeconds * 1000) / 3);
        renewal.unref();
        request.idempotencyKey = { key, fingerprint, userId, renewal };
        return;
      }
      if (held.fingerprint !== fingerprint) throw CommonErrors.IDEMPOTENCY_KEY_REUSED();
      if (held.state === 'RUNNING') throw CommonErrors.IDEMPOTENCY_KEY_IN_USE({ retryAfter: 1 });
      // A secret is shown once: a repeat cannot have it again, and running again would make a second one.
      if (held.secret) throw CommonErrors.IDEMPOTENCY_ANSWER_NOT_KEPT();
      reply.header('idempotent-replayed', 'true').code(held.status);
      if (held.contentType) reply.type(held.contentType);
      return reply.send(held.body === '' ? undefined : held.body);
    },

    /** The request ended without its answer being sent (the client went away): stop renewing; the lease ends the claim. */
    async onEnd(request: FastifyRequest) {
      if (request.idempotencyKey) clearInterval(request.idempotencyKey.renewal);
    },

    async onSend(request: FastifyRequest, reply: FastifyReply, payload: unknown) {
      const claimed = request.idempotencyKey;
      if (!claimed) return payload;
      request.idempotencyKey = null;
      clearInterval(claimed.renewal);
      const text = typeof payload === 'string' ? payload : Buffer.isBuffer(payload) ? payload.toString('utf8') : payload === undefined || payload === null ? '' : null;
      const contentType = reply.getHeader('content-type');
      // The answer goes out even if Redis does not take it (it went away meanwhile): the claim then ends with its lease.
      const secret = request.routeOptions.config.revealsSecret === true && reply.statusCode < 300;
      const kept =
        reply.statusCode >= 500 || text === null || text.length > MAX_STORED_BODY
          ? store.release(claimed.userId, claimed.key)
          : secret
            ? store.finish(claimed.userId, claimed.key, { state: 'DONE', fingerprint: claimed.fingerprint, status: reply.statusCode, contentType: null, body: '', secret: true })
            : store.finish(claimed.userId, claimed.key, { state: 'DONE', fingerprint: claimed.fingerprint, status: reply.statusCode, contentType: typeof contentType === 'string' ? contentType : null, body: text });
      await kept.catch((error: unknown) => request.log.warn({ err: error }, 'idempotency key not updated'));
      return payload;
    },
  };
}
