import { createHmac, timingSafeEqual } from 'node:crypto';

/** Where delivery ids accepted in the last 10 minutes are kept; a shared one (Redis, a database) for apps on several servers. */
export interface ReplayStore {
  /** Records the id for `ttlSeconds`; false when it was already there (a replay). */
  remember(deliveryId: string, ttlSeconds: number): Promise<boolean>;
}

/** A replay store in this process's memory. */
export class MemoryReplayStore implements ReplayStore {
  private readonly seen = new Map<string, number>();
  async remember(deliveryId: string, ttlSeconds: number): Promise<boolean> {
    const now = Date.now();
    for (const [id, until] of this.seen) if (until <= now) this.seen.delete(id);
    if (this.seen.has(deliveryId)) return false;
    this.seen.set(deliveryId, now + ttlSeconds * 1000);
    return true;
  }
}

export type VerifyFailure = 'MISSING_HEADERS' | 'BAD_SIGNATURE' | 'STALE_TIMESTAMP' | 'REPLAYED';

/**
 * Checks a webhook call as the specification says: the hex HMAC-SHA256, keyed by the whole secret,
 * over `<X-Service-Timestamp>.<raw body>` equals one of the `v1=` values of `X-Service-Signature`
 * (constant time; during a rotation give both secrets), the timestamp is within 300 seconds of now,
 * and the `X-Service-Delivery` id was not accepted in the last 10 minutes.
 */
export async function verifyWebhook(input: {
  secrets: string | string[];
  headers: Record<string, string | string[] | undefined>;
  rawBody: Buffer | string;
  replayStore: ReplayStore;
  nowSeconds?: number;
}): Promise<{ ok: true; deliveryId: string } | { ok: false; reason: VerifyFailure }> {
  const header = (name: string) => {
    const value = input.headers[name] ?? input.headers[name.toLowerCase()];
    return Array.isArray(value) ? value[0] : value;
  };
  const timestamp = header('x-service-timestamp');
  const signature = header('x-service-signature');
  const deliveryId = header('x-service-delivery');
  if (!timestamp || !signature || !deliveryId || !/^\d+$/.test(timestamp)) return { ok: false, reason: 'MISSING_HEADERS' };
  const given = signature
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part.startsWith('v1='))
    .map((part) => Buffer.from(part.slice(3)));
  const body = typeof input.rawBody === 'string' ? Buffer.from(input.rawBody) : input.rawBody;
  const matches = [input.secrets].flat().some((secret) => {
    const expected = Buffer.from(createHmac('sha256', secret).update(`${timestamp}.`).update(body).digest('hex'));
    return given.some((value) => value.length === expected.length && timingSafeEqual(value, expected));
  });
  if (!matches) return { ok: false, reason: 'BAD_SIGNATURE' };
  const now = input.nowSeconds ?? Math.floor(Date.now() / 1000);
  if (Math.abs(now - Number(timestamp)) > 300) return { ok: false, reason: 'STALE_TIMESTAMP' };
  if (!(await input.replayStore.remember(deliveryId, 600))) return { ok: false, reason: 'REPLAYED' };
  return { ok: true, deliveryId };
}
