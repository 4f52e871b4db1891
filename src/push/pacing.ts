import type { PushMessage, PushProvider, PushResult, PushTarget } from './push.js';

/** How a paced provider waits and retries when the push service says "not now". */
export interface PacingOptions {
  /** Sends of one push before its refusal is final (the first included). */
  attempts: number;
  /** The wait after a refusal that named none (doubled on each attempt of the same push). */
  baseDelayMs: number;
  /** No wait longer than this, whatever the service asks. */
  maxDelayMs: number;
}

export const DEFAULT_PACING: PacingOptions = { attempts: 6, baseDelayMs: 500, maxDelayMs: 60_000 };

/**
 * The `Retry-After` of an answer in milliseconds: delay-seconds or an HTTP date (RFC 9110, 10.2.3);
 * undefined when absent or unreadable.
 */
export function retryAfterMs(header: string | null | undefined, now = Date.now()): number | undefined {
  if (!header) return undefined;
  const trimmed = header.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/**
 * When a push service's answer means "not now" (429: throttled; 503: unavailable; 500: retry with
 * backoff, as FCM and APNs both advise), how long to wait: its `Retry-After`, else 0 (the pacing's
 * doubling backoff decides). Undefined for any other answer.
 */
export function notNowMs(status: number, retryAfter: string | null | undefined): number | undefined {
  return status === 429 || status === 503 || status === 500 ? (retryAfterMs(retryAfter) ?? 0) : undefined;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A push provider that honours the service's "not now" (FCM 429 and 503 with `Retry-After`, APNs 429
 * and 503): the refusal closes the gate for every push of this process to that service until the time
 * asked (or a doubling backoff when none was given), since each send refused while over quota still
 * counts against it; the refused push is sent again once the gate opens, the delivered ones never.
 * After `attempts` refusals of one push, its refusal is the answer.
 */
export class PacedPushProvider implements PushProvider {
  readonly name: string;
  private openAt = 0;
  /** Refusals answered by the service, and pushes sent again after one (for metrics and tests). */
  readonly counts = { throttled: 0, retried: 0 };

  constructor(
    private readonly inner: PushProvider,
    private readonly options: PacingOptions = DEFAULT_PACING,
  ) {
    this.name = inner.name;
  }

  async send(target: PushTarget, message: PushMessage): Promise<PushResult> {
    for (let attempt = 1; ; attempt++) {
      // Every push waits for the gate: another push's refusal closes it for all.
      for (let wait = this.openAt - Date.now(); wait > 0; wait = this.openAt - Date.now()) await sleep(wait);
      const result = await this.inner.send(target, message);
      if (result.ok || result.retryAfterMs === undefined) return result;
      this.counts.throttled++;
      if (attempt >= this.options.attempts) return result;
      const backoff = this.options.baseDelayMs * 2 ** (attempt - 1);
      const delay = Math.min(this.options.maxDelayMs, Math.max(result.retryAfterMs, backoff));
      // Jitter (up to a tenth) so the pushes waiting do not all go at the same millisecond.
      this.openAt = Math.max(this.openAt, Date.now() + delay + Math.floor(Math.random() * delay * 0.1));
      this.counts.retried++;
    }
  }

  async close(): Promise<void> {
    await this.inner.close?.();
  }
}
