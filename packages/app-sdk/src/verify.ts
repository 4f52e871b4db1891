import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Where the calls handled are kept (by `replayKeyOf`, from signed data), so that each is handled once: taken while a handler runs,
 * remembered once it succeeded, forgotten when it failed (so the service's retry is handled). A
 * shared one (Redis, a database) for apps on several servers.
 */
export interface ReplayStore {
  /**
   * Takes the delivery for handling, for `leaseSeconds`: `NEW` (handle it), `HANDLED` (it was handled
   * in the last `ttl` of `finish`), or `BUSY` (another handler has it right now).
   */
  begin(key: string, leaseSeconds: number): Promise<'NEW' | 'HANDLED' | 'BUSY'>;
  /** The handler succeeded: the delivery is remembered as handled for `ttlSeconds`. */
  finish(key: string, ttlSeconds: number): Promise<void>;
  /** The handler failed: the delivery is forgotten, and its next try is handled. */
  abandon(key: string): Promise<void>;
}

/** A replay store in this process's memory. */
export class MemoryReplayStore implements ReplayStore {
  private readonly entries = new Map<string, { state: 'BUSY' | 'HANDLED'; until: number }>();

  async begin(key: string, leaseSeconds: number): Promise<'NEW' | 'HANDLED' | 'BUSY'> {
    const now = Date.now();
    for (const [id, entry] of this.entries) if (entry.until <= now) this.entries.delete(id);
    const entry = this.entries.get(key);
    if (entry) return entry.state;
    this.entries.set(key, { state: 'BUSY', until: now + leaseSeconds * 1000 });
    return 'NEW';
  }

  async finish(key: string, ttlSeconds: number): Promise<void> {
    this.entries.set(key, { state: 'HANDLED', until: Date.now() + ttlSeconds * 1000 });
  }

  async abandon(key: string): Promise<void> {
    this.entries.delete(key);
  }
}

export type VerifyFailure = 'MISSING_HEADERS' | 'BAD_SIGNATURE' | 'STALE_TIMESTAMP' | 'REPLAYED';

/**
 * What identifies a verified call for de-duplication, from what the signature covers (the timestamp
 * and the body), never from the unsigned `X-Service-Delivery` header: an event (a payment's, a room's)
 * by its event id (the same on every retry of the event), any other call by the digest of its body (a retry sends the
 * same bytes; a new call, a new form step or new answers, differs). A captured call sent again with new
 * header values is the same call.
 */
export function replayKeyOf(rawBody: Buffer | string): string {
  const body = typeof rawBody === 'string' ? Buffer.from(rawBody) : rawBody;
  try {
    const parsed = JSON.parse(body.toString('utf8')) as { type?: unknown; id?: unknown };
    // Events (payments, rooms) carry an id the service keeps on every retry of them.
    if (typeof parsed.type === 'string' && parsed.type !== 'invocation' && typeof parsed.id === 'string') return `event:${parsed.id}`;
  } catch {
    // Not JSON: keyed by its bytes like any other call.
  }
  return `body:${createHash('sha256').update(body).digest('hex')}`;
}

/**
 * Checks a webhook call as the specification says: the hex HMAC-SHA256, keyed by the whole secret,
 * over `<X-Service-Timestamp>.<raw body>` equals one of the `v1=` values of `X-Service-Signature`
 * (constant time; during a rotation give both secrets), and the timestamp is within 300 seconds of
 * now. With a `replayStore`, a call handled in the last 10 minutes is refused (`REPLAYED`) and this
 * one is recorded as handled at once, keyed by what the signature covers (`replayKeyOf`);
 * `webhookHandler` instead records it only once its handler succeeded.
 */
export async function verifyWebhook(input: {
  secrets: string | string[];
  headers: Record<string, string | string[] | undefined> | Headers;
  rawBody: Buffer | string;
  replayStore?: ReplayStore;
  nowSeconds?: number;
}): Promise<{ ok: true; deliveryId: string; replayKey: string } | { ok: false; reason: VerifyFailure }> {
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
  const replayKey = replayKeyOf(body);
  if (input.replayStore) {
    if ((await input.replayStore.begin(replayKey, REPLAY_TTL_SECONDS)) !== 'NEW') return { ok: false, reason: 'REPLAYED' };
    await input.replayStore.finish(replayKey, REPLAY_TTL_SECONDS);
  }
  return { ok: true, deliveryId, replayKey };
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
