import { ApiError, OfflineError, SignedOutError } from './errors.js';
import type { Session } from './session.js';
import { backoff, sleep, uuid } from './util.js';

export interface HttpOptions {
  /** Each attempt's limit (ms): a request that takes longer is abandoned and retried. */
  timeoutMs: number;
  /** Attempts after the first, for what is safe to repeat. */
  retries: number;
}

const MUTATING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
/** Answers worth waiting out: the service or its front is busy or restarting, or the same key's first request still runs. */
const RETRIED_STATUS = new Set([502, 503, 504]);

/** Signing in and refreshing take no access token and are not repeated (a code is texted, and used, once). */
const isOpen = (pathname: string) => pathname.startsWith('/api/auth/') && pathname !== '/api/auth/logout';

/**
 * The fetch the REST client sends through: the access token (fresh), an `Idempotency-Key` on every
 * mutating call that has none (the same on each retry, so the service runs it once), retries with
 * backoff after a network failure, a timeout or a 502/503/504 (after `Retry-After` when given), one
 * refresh and retry after a 401, and every refusal thrown as an {@link ApiError}.
 */
export function sessionFetch(session: Session, fetchImpl: (request: Request) => Promise<Response>, options: HttpOptions) {
  return async (request: Request): Promise<Response> => {
    const open = isOpen(new URL(request.url).pathname);
    const mutating = MUTATING.has(request.method);
    if (mutating && !open && !request.headers.has('idempotency-key')) request.headers.set('idempotency-key', uuid());
    const retries = open ? 0 : options.retries;
    let refreshed = false;
    for (let attempt = 0; ; attempt++) {
      const sent = request.clone();
      let response: Response;
      try {
        // A refresh that could not reach the service, or found it busy, is retried like the call itself.
        if (!open) sent.headers.set('authorization', `Bearer ${await session.accessToken()}`);
        response = await withTimeout(fetchImpl, sent, options.timeoutMs);
      } catch (error) {
        const transient = error instanceof ApiError ? RETRIED_STATUS.has(error.status) : !(error instanceof SignedOutError);
        if (!transient) throw error;
        if (attempt >= retries) throw error instanceof ApiError || error instanceof OfflineError ? error : new OfflineError(error);
        await sleep(backoff(attempt));
        continue;
      }
      if (response.ok) return response;
      const error = await ApiError.of(response.clone());
      if (response.status === 401 && !open && !refreshed) {
        refreshed = true;
        await session.refresh();
        continue;
      }
      const busy = RETRIED_STATUS.has(response.status) || error.code === 'IDEMPOTENCY_KEY_IN_USE';
      if (busy && attempt < retries) {
        await sleep(error.retryAfter !== null ? error.retryAfter * 1000 : backoff(attempt));
        continue;
      }
      throw error;
    }
  };
}

async function withTimeout(fetchImpl: (request: Request) => Promise<Response>, request: Request, ms: number): Promise<Response> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new Error(`no answer in ${ms} ms`)), ms);
  try {
    return await fetchImpl(new Request(request, { signal: controller.signal }));
  } finally {
    clearTimeout(timer);
  }
}
