import type { Redis } from 'ioredis';

export interface RateLimitResult {
  allowed: boolean;
  /** Seconds until the window resets. */
  retryAfter: number;
}

/**
 * A fixed window counter in Redis, right across api nodes: at most `limit` hits per `windowSeconds`
 * for one key.
 */
export async function hitRateLimit(redis: Redis, key: string, limit: number, windowSeconds: number): Promise<RateLimitResult> {
  const results = await redis.multi().incr(key).expire(key, windowSeconds, 'NX').ttl(key).exec();
  const count = Number(results?.[0]?.[1] ?? 0);
  const ttl = Number(results?.[2]?.[1] ?? windowSeconds);
  return { allowed: count <= limit, retryAfter: ttl > 0 ? ttl : windowSeconds };
}
