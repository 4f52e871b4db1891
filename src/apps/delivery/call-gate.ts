import type { RedisClient } from '../../platform/redis.js';
import type { Keyspace } from '../../platform/keyspace.js';

/** Spec, "Limits": 5 failures in 60 seconds open the breaker for 60 seconds; 8 calls at once per app. */
export const BREAKER_FAILURES = 5;
export const BREAKER_WINDOW_MS = 60_000;
export const BREAKER_OPEN_MS = 60_000;
export const MAX_CONCURRENT_CALLS = 8;

// KEYS: open, probe, inflight. ARGV: now, openMs, callId, deadline, maxConcurrent, probeTtlMs.
// Returns 'OPEN' (not called), 'BUSY' (too many at once), 'CLOSED' or 'PROBE' (called; a probe decides the breaker).
const ADMIT = `
local now = tonumber(ARGV[1])
local state = 'CLOSED'
local openedAt = redis.call('GET', KEYS[1])
if openedAt then
  if now < tonumber(openedAt) + tonumber(ARGV[2]) then return 'OPEN' end
  if not redis.call('SET', KEYS[2], ARGV[3], 'NX', 'PX', ARGV[6]) then return 'OPEN' end
  state = 'PROBE'
end
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
if redis.call('ZCARD', KEYS[3]) >= tonumber(ARGV[5]) then
  if state == 'PROBE' then redis.call('DEL', KEYS[2]) end
  return 'BUSY'
end
redis.call('ZADD', KEYS[3], ARGV[4], ARGV[3])
redis.call('PEXPIRE', KEYS[3], math.max(1, tonumber(ARGV[4]) - now))
return state
`;

// KEYS: open, probe, inflight, failures. ARGV: now, callId, failed (1/0), wasProbe (1/0), window, threshold.
const SETTLE = `
local now = tonumber(ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[2])
if ARGV[4] == '1' then
  redis.call('DEL', KEYS[2])
  if ARGV[3] == '1' then
    redis.call('SET', KEYS[1], now)
  else
    redis.call('DEL', KEYS[1], KEYS[4])
  end
  return 1
end
if ARGV[3] == '1' then
  redis.call('ZADD', KEYS[4], now, ARGV[2])
  redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', now - tonumber(ARGV[5]))
  redis.call('PEXPIRE', KEYS[4], tonumber(ARGV[5]))
  if redis.call('ZCARD', KEYS[4]) >= tonumber(ARGV[6]) then
    redis.call('SET', KEYS[1], now)
    redis.call('DEL', KEYS[4])
  end
end
return 1
`;

export type Admission = 'CLOSED' | 'PROBE' | 'OPEN' | 'BUSY';

/**
 * What every process asks before calling an app, and tells after, in Redis (so all worker and api
 * processes share it). The circuit breaker: 5 failures within 60 s open it; for 60 s the app is not
 * called; then the first call goes through as a probe and decides (success closes, failure opens it
 * again), others waiting while the probe runs. The concurrency limit: at most 8 calls in flight per
 * app across all processes; the ninth is refused at once. In-flight calls are kept with a deadline,
 * so those of a process that died stop counting once their time is over. Times come from the
 * service's clock.
 */
export class CallGate {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keyspace,
  ) {
    redis.defineCommand('appCallAdmit', { numberOfKeys: 3, lua: ADMIT });
    redis.defineCommand('appCallSettle', { numberOfKeys: 4, lua: SETTLE });
  }

  async admit(appId: string, callId: string, nowMs: number, timeoutMs: number): Promise<Admission> {
    const k = this.keys.apps;
    const deadline = nowMs + timeoutMs + 5_000;
    // Cast: the Lua script answers one of the Admission words.
    return (await this.redis.appCallAdmit(k.breakerOpen(appId), k.breakerProbe(appId), k.inflight(appId), nowMs, BREAKER_OPEN_MS, callId, deadline, MAX_CONCURRENT_CALLS, timeoutMs + 5_000)) as Admission;
  }

  async settle(appId: string, callId: string, nowMs: number, failed: boolean, wasProbe: boolean): Promise<void> {
    const k = this.keys.apps;
    await this.redis.appCallSettle(k.breakerOpen(appId), k.breakerProbe(appId), k.inflight(appId), k.breakerFailures(appId), nowMs, callId, failed ? '1' : '0', wasProbe ? '1' : '0', BREAKER_WINDOW_MS, BREAKER_FAILURES);
  }

  /** Whether the breaker is open now (members are told the app is not answering). */
  async isOpen(appId: string, nowMs: number): Promise<boolean> {
    return (await this.openUntil(appId, nowMs)) !== null;
  }

  /** When an open breaker lets its next call through as a probe (ms since 1970), or null when it is not open. */
  async openUntil(appId: string, nowMs: number): Promise<number | null> {
    const openedAt = await this.redis.get(this.keys.apps.breakerOpen(appId));
    return openedAt !== null && nowMs < Number(openedAt) + BREAKER_OPEN_MS ? Number(openedAt) + BREAKER_OPEN_MS : null;
  }

  /** The owner closes the breaker (the app fixed): calls go through at once, its failure count starts again. */
  async close(appId: string): Promise<void> {
    const k = this.keys.apps;
    // One slot (`{app:ID}`): one command.
    await this.redis.del(k.breakerOpen(appId), k.breakerProbe(appId), k.breakerFailures(appId));
  }
}
