import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Where delivery ids are kept, so that each delivery is handled once: taken while a handler runs,
 * remembered once it succeeded, forgotten when it failed (so the service's retry is handled). A
 * shared one (Redis, a database) for apps on several servers.
 */
export interface ReplayStore {
  /**
   * Takes the delivery for handling, for `leaseSeconds`: `NEW` (handle it), `HANDLED` (it was handled
   * in the last `ttl` of `finish`), or `BUSY` (another handler has it right now).
   */
  begin(deliveryId: string, leaseSeconds: number): Promise<'NEW' | 'HANDLED' | 'BUSY'>;
  /** The handler succeeded: the delivery is remembered as handled for `ttlSeconds`. */
  finish(deliveryId: string, ttlSeconds: number): Promise<void>;
  /** The handler failed: the delivery is forgotten, and its next try is handled. */
  abandon(deliveryId: string): Promise<void>;
}

/** A replay store in this process's memory. */
export class MemoryReplayStore implements ReplayStore {
  private readonly entries = new Map<string, { state: 'BUSY' | 'HANDLED'; until: number }>();

  async begin(deliveryId: string, leaseSeconds: number): Promise<'NEW' | 'HANDLED' | 'BUSY'> {
    const now = Date.now();
    for (const [id, entry] of this.entries) if (entry.until <= now) this.entries.delete(id);
    const entry = this.entries.get(deliveryId);
    if (entry) return entry.state;
    this.entries.set(deliveryId, { state: 'BUSY', until: now + leaseSeconds * 1000 });
    return 'NEW';
  }

  async finish(deliveryId: string, ttlSeconds: number): Promise<void> {
    this.entries.set(deliveryId, { state: 'HANDLED', until: Date.now() + ttlSeconds * 1000 });
  }

  async abandon(deliveryId: string): Promise<void> {
    this.entries.delete(deliveryId);
  }
}

export type VerifyFailure = 'MISSING_HEADERS' | 'BAD_SIGNATURE' | 'STALE_TIMESTAMP' | 'REPLAYED';

/**
 * Checks a webhook call as the specification says: the hex HMAC-SHA256, keyed by the whole secret,
 * over `<X-Service-Timestamp>.<raw body>` equals one of the `v1=` values of `X-Service-Signature`
 * (constant time; during a rotation give both secrets), and the timestamp is within 300 seconds of
 * now. With a `replayStore`, a delivery id handled in the last 10 minutes is refused (`REPLAYED`) and
 * this one is recorded as handled at once; `webhookHandler` instead records it only once its handler
 * succeeded.
 */
export async function verifyWebhook(input: {
  secrets: string | string[];
  headers: Record<string, string | string[] | undefined> | Headers;
  rawBody: Buffer | string;
  replayStore?: ReplayStore;
  nowSeconds?: number;
}): Promise<{ ok: true; deliveryId: string } | { ok: false; reason: VerifyFailure }> {
  const header = (name: string) => headerOf(input.headers, name);
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
  if (input.replayStore) {
    if ((await input.replayStore.begin(deliveryId, REPLAY_TTL_SECONDS)) !== 'NEW') return { ok: false, reason: 'REPLAYED' };
    await input.replayStore.finish(deliveryId, REPLAY_TTL_SECONDS);
  }
  return { ok: true, deliveryId };
}

/** How long a handled delivery id is remembered: longer than the service's signature window. */
export const REPLAY_TTL_SECONDS = 600;

/** One header, whatever its case, from Node's headers object or a Fetch `Headers`. */
export function headerOf(headers: Record<string, string | string[] | undefined> | Headers, name: string): string | undefined {
  if (headers instanceof Headers) return headers.get(name) ?? undefined;
  const key = Object.keys(headers).find((k) => k.toLowerCase() === name.toLowerCase());
  const value = key === undefined ? undefined : headers[key];
  return Array.isArray(value) ? value[0] : value;
}
