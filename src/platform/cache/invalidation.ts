import { randomUUID } from 'node:crypto';
import type { RedisClient } from '../redis.js';
import { TtlCache } from './ttl-cache.js';
import { closeRedis, duplicate } from '../redis.js';

/** One kind of cached record: reads go through the cache, and a write clears its key everywhere. */
export interface SharedCache<V> {
  get(key: string, load: () => Promise<V>): Promise<V>;
  clear(key: string): Promise<void>;
}

/** The bus's cache of `kind`, or, for a repo built without a bus, one that always reads and keeps nothing. */
export function sharedCache<V>(bus: CacheBus | undefined, kind: string, ttlMs: number): SharedCache<V> {
  return bus ? bus.cache<V>(kind, ttlMs) : { get: (_key, load) => load(), clear: async () => undefined };
}

/**
 * Short-lived in-process caches of database reads on hot paths, kept right across processes: a
 * write drops the entry here at once and publishes the key over Redis, and every other process drops
 * it when the message arrives (milliseconds); a read under way meanwhile is not kept (TtlCache). The
 * entries' short life bounds what a lost message could leave behind.
 */
export class CacheBus {
  private readonly caches = new Map<string, TtlCache<unknown>>();
  private subscriber: RedisClient | null = null;
  /** This process's name on the channel: its own clearings, already done here, are not done again. */
  private readonly origin = randomUUID();

  constructor(
    private readonly redis: RedisClient,
    /** The pub/sub channel of clearings (the keyspace's `cacheInvalidation`). */
    private readonly channel: string,
  ) {}

  async start(): Promise<void> {
    const subscriber = duplicate(this.redis);
    await subscriber.subscribe(this.channel);
    // A message is `<origin> <kind>:<key>`.
    subscriber.on('message', (_channel: string, message: string) => {
      const space = message.indexOf(' ');
      if (message.slice(0, space) === this.origin) return;
      const at = message.indexOf(':', space);
      this.caches.get(message.slice(space + 1, at))?.delete(message.slice(at + 1));
    });
    this.subscriber = subscriber;
  }

  /** The cache of one kind of record (e.g. `device`), entries living `ttlMs`. */
  cache<V>(kind: string, ttlMs: number): SharedCache<V> {
    const cache = new TtlCache<V>(ttlMs);
    // Cast: caches of every value type share one map by kind; each is read back with its own type.
    this.caches.set(kind, cache as TtlCache<unknown>);
    return {
      get: (key, load) => cache.get(key, load),
      // Drops the entry in this process now and in every other one when they hear of it.
      clear: async (key) => {
        cache.delete(key);
        await this.redis.publish(this.channel, `${this.origin} ${kind}:${key}`);
      },
    };
  }

  /** Drops every entry of every kind (after clearings may have been missed). */
  clearAll(): void {
    for (const cache of this.caches.values()) cache.clear();
  }

  async close(): Promise<void> {
    if (this.subscriber) await closeRedis(this.subscriber);
  }
}
