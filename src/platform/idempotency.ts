import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Keyspace } from './keyspace.js';

/** What a key holds: a request under way, or the answer it got. */
export type IdempotencyRecord = { state: 'RUNNING'; fingerprint: string } | { state: 'DONE'; fingerprint: string; status: number; contentType: string | null; body: string };

/** A request under way keeps its key this long (a process that died frees it); an answer is kept 24 hours. */
const RUNNING_SECONDS = 60;
const KEPT_SECONDS = 24 * 3600;

/**
 * Idempotency keys of mutating `/api` calls (the IETF `Idempotency-Key` draft), per caller, in Redis:
 * the first request claims the key, its answer is stored under it, and a repeat gets that answer.
 */
export class IdempotencyStore {
  constructor(
    private readonly redis: Redis,
    private readonly keys: Keyspace,
  ) {}

  private key(userId: string, idempotencyKey: string): string {
    return this.keys.idempotency(userId, createHash('sha256').update(idempotencyKey).digest('base64url'));
  }

  /** Claims the key for a new request (null), or returns what the key already holds. */
  async claim(userId: string, idempotencyKey: string, fingerprint: string): Promise<IdempotencyRecord | null> {
    const key = this.key(userId, idempotencyKey);
    for (let attempt = 0; attempt < 2; attempt++) {
      if ((await this.redis.set(key, JSON.stringify({ state: 'RUNNING', fingerprint }), 'EX', RUNNING_SECONDS, 'NX')) === 'OK') return null;
      const held = await this.redis.get(key);
      if (held) return JSON.parse(held) as IdempotencyRecord;
    }
    return null;
  }

  async finish(userId: string, idempotencyKey: string, record: Extract<IdempotencyRecord, { state: 'DONE' }>): Promise<void> {
    await this.redis.set(this.key(userId, idempotencyKey), JSON.stringify(record), 'EX', KEPT_SECONDS);
  }

  /** Frees the key (the request ended without an answer worth keeping: a 5xx). */
  async release(userId: string, idempotencyKey: string): Promise<void> {
    await this.redis.del(this.key(userId, idempotencyKey));
  }
}
