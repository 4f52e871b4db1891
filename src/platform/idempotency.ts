import { createHash } from 'node:crypto';
import type { RedisClient } from './redis.js';
import type { Keyspace } from './keyspace.js';

/** What a key holds: a request under way, or the answer it got. */
export type IdempotencyRecord =
  | { state: 'RUNNING'; fingerprint: string }
  /** `secret`: the answer showed a secret once; only its status is kept, never its body. */
  | { state: 'DONE'; fingerprint: string; status: number; contentType: string | null; body: string; secret?: boolean };

const running = (fingerprint: string) => JSON.stringify({ state: 'RUNNING', fingerprint });
/** Extends a claim, in one step so an answer stored meanwhile keeps its 24 hours. */
const RENEW_CLAIM = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('expire', KEYS[1], ARGV[2]) end return 0`;

/** An answer is kept 24 hours. */
const KEPT_SECONDS = 24 * 3600;

/**
 * Idempotency keys of mutating `/api` calls (the IETF `Idempotency-Key` draft), per caller, in Redis:
 * the first request claims the key, its answer is stored under it, and a repeat gets that answer.
 */
export class IdempotencyStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keyspace,
    /** A request under way holds its key this long, renewed while it runs: a process that died frees it. */
    readonly leaseSeconds: number,
  ) {}

  private key(userId: string, idempotencyKey: string): string {
    return this.keys.idempotency(userId, createHash('sha256').update(idempotencyKey).digest('base64url'));
  }

  /** Claims the key for a new request (null), or returns what the key already holds. */
  async claim(userId: string, idempotencyKey: string, fingerprint: string): Promise<IdempotencyRecord | null> {
    const key = this.key(userId, idempotencyKey);
    for (let attempt = 0; attempt < 2; attempt++) {
      if ((await this.redis.set(key, running(fingerprint), 'EX', this.leaseSeconds, 'NX')) === 'OK') return null;
      const held = await this.redis.get(key);
      // Cast: written by this store as JSON of this shape.
      if (held) return JSON.parse(held) as IdempotencyRecord;
    }
    return null;
  }

  /** Keeps the claim of a request still running (only while it is a claim: an answer is not shortened). */
  async renew(userId: string, idempotencyKey: string, fingerprint: string): Promise<void> {
    const key = this.key(userId, idempotencyKey);
    await this.redis.eval(RENEW_CLAIM, 1, key, running(fingerprint), this.leaseSeconds);
  }

  async finish(userId: string, idempotencyKey: string, record: Extract<IdempotencyRecord, { state: 'DONE' }>): Promise<void> {
    await this.redis.set(this.key(userId, idempotencyKey), JSON.stringify(record), 'EX', KEPT_SECONDS);
  }

  /** Frees the key (the request ended without an answer worth keeping: a 5xx). */
  async release(userId: string, idempotencyKey: string): Promise<void> {
    await this.redis.del(this.key(userId, idempotencyKey));
  }
}
