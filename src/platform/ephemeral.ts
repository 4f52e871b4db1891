import type { RedisClient } from './redis.js';

/** DECRBY that stops at zero, and drops the key there. */
const RELEASE_SLOTS = `local left = (tonumber(redis.call('get', KEYS[1]) or '0')) - tonumber(ARGV[1])
if left > 0 then redis.call('set', KEYS[1], left, 'KEEPTTL') else redis.call('del', KEYS[1]) end
return left`;

export interface RateLimitResult {
  allowed: boolean;
  /** Seconds until the window resets. */
  retryAfter: number;
}

/**
 * Short-lived values in Redis (nonces, one-time markers, pending codes) and fixed-window counters,
 * right across api nodes. Services name keys through the keyspace and never send Redis commands.
 */
export class EphemeralStore {
  constructor(private readonly redis: RedisClient) {}

  async put(key: string, value: string, ttlSeconds: number): Promise<void> {
    await this.redis.set(key, value, 'EX', ttlSeconds);
  }

  /** Stores the value only when the key is absent; true when this call stored it. */
  async putIfAbsent(key: string, value: string, ttlSeconds: number): Promise<boolean> {
    return (await this.redis.set(key, value, 'EX', ttlSeconds, 'NX')) === 'OK';
  }

  get(key: string): Promise<string | null> {
    return this.redis.get(key);
  }

  /** Reads and removes at once: at most one caller gets a value. */
  take(key: string): Promise<string | null> {
    return this.redis.getdel(key);
  }

  async exists(key: string): Promise<boolean> {
    return (await this.redis.exists(key)) === 1;
  }

  /** Removes the key; true when it was there. */
  async remove(key: string): Promise<boolean> {
    return (await this.redis.del(key)) === 1;
  }

  /** Seconds the key has left (at least 1). */
  async secondsLeft(key: string): Promise<number> {
    return Math.max(1, await this.redis.ttl(key));
  }

  /** One hit of a fixed-window counter: at most `limit` hits per `windowSeconds` for the key. */
  async hit(key: string, limit: number, windowSeconds: number): Promise<RateLimitResult> {
    const results = await this.redis.multi().incr(key).expire(key, windowSeconds, 'NX').ttl(key).exec();
    const count = Number(results?.[0]?.[1] ?? 0);
    const ttl = Number(results?.[2]?.[1] ?? windowSeconds);
    return { allowed: count <= limit, retryAfter: ttl > 0 ? ttl : windowSeconds };
  }

  /**
   * Takes `n` slots of a limit whose settled count is kept elsewhere (documents in the database): the
   * slots now taken and not yet given back, these included. The key lives `ttlSeconds` from the last
   * take, so slots of a process that died are freed by themselves.
   */
  async takeSlots(key: string, n: number, ttlSeconds: number): Promise<number> {
    const results = await this.redis.multi().incrby(key, n).expire(key, ttlSeconds).exec();
    return Number(results?.[0]?.[1] ?? n);
  }

  /** The slots taken and not given back now. */
  async slotsTaken(key: string): Promise<number> {
    return Number((await this.redis.get(key)) ?? 0);
  }

  /** Gives back slots taken with takeSlots; never below zero (an expired key stays gone). */
  async releaseSlots(key: string, n: number): Promise<void> {
    await this.redis.eval(RELEASE_SLOTS, 1, key, String(n));
  }

  /**
   * Adds one to each counter (each expiring `ttlSeconds` after its first count) in one round trip; their
   * counts. One transaction: on a Redis Cluster the keys must share a hash tag.
   */
  async countAll(keys: string[], ttlSeconds: number): Promise<number[]> {
    const multi = this.redis.multi();
    for (const key of keys) multi.incr(key).expire(key, ttlSeconds, 'NX');
    const results = (await multi.exec()) ?? [];
    return keys.map((_, i) => Number(results[2 * i]?.[1] ?? 0));
  }

  /**
   * Whether the key's window already holds `limit` hits (checked before an attempt that `hit` counts
   * only when it fails): the seconds until it resets when it does, else null.
   */
  async exhausted(key: string, limit: number): Promise<number | null> {
    if (Number((await this.redis.get(key)) ?? 0) < limit) return null;
    return this.secondsLeft(key);
  }
}
