import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';

// Deletes the lock only while it still holds this holder's token (a lock that expired and was taken
// by another holder is left to them).
const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`;

/**
 * A lock across processes in Redis: `fn` runs while this caller holds `key`, which expires after
 * `ttlSeconds` should the holder die. Waits up to `waitMs` for it, then throws.
 */
export class RedisLock {
  constructor(private readonly redis: Redis) {
    redis.defineCommand('lockRelease', { numberOfKeys: 1, lua: RELEASE });
  }

  async with<T>(key: string, fn: () => Promise<T>, options: { ttlSeconds: number; waitMs: number }): Promise<T> {
    const token = randomUUID();
    const deadline = Date.now() + options.waitMs;
    while ((await this.redis.set(key, token, 'EX', options.ttlSeconds, 'NX')) !== 'OK') {
      if (Date.now() > deadline) throw new Error(`the lock ${key} stayed taken for ${options.waitMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 15));
    }
    try {
      return await fn();
    } finally {
      await this.redis.lockRelease(key, token);
    }
  }
}
