import { randomUUID } from 'node:crypto';
import type { RedisClient } from './redis.js';

// Deletes the lock only while it still holds this holder's token (a lock that expired and was taken
// by another holder is left to them).
const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`;
// Extends the lock's life only while it still holds this holder's token.
const RENEW = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0`;

/**
 * A lock across processes in Redis: `fn` runs while this caller holds `key`. The lock lives `ttlSeconds`
 * and is renewed every third of that while `fn` runs, so a long `fn` keeps it and a holder that dies
 * frees it within `ttlSeconds`. Waits up to `waitMs` for it, then throws.
 */
export class RedisLock {
  constructor(private readonly redis: RedisClient) {
    redis.defineCommand('lockRelease', { numberOfKeys: 1, lua: RELEASE });
    redis.defineCommand('lockRenew', { numberOfKeys: 1, lua: RENEW });
  }

  async with<T>(key: string, fn: () => Promise<T>, options: { ttlSeconds: number; waitMs: number }): Promise<T> {
    const token = randomUUID();
    const deadline = Date.now() + options.waitMs;
    while ((await this.redis.set(key, token, 'EX', options.ttlSeconds, 'NX')) !== 'OK') {
      if (Date.now() > deadline) throw new Error(`the lock ${key} stayed taken for ${options.waitMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 15));
    }
    const ttlMs = options.ttlSeconds * 1000;
    const renewal = setInterval(() => void this.redis.lockRenew(key, token, String(ttlMs)).catch(() => undefined), ttlMs / 3);
    try {
      return await fn();
    } finally {
      clearInterval(renewal);
      await this.redis.lockRelease(key, token);
    }
  }
}
