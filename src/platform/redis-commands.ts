import type { Result } from 'ioredis';

// The Lua commands this service defines with `defineCommand` (the inbox's append and replace,
// a lock's release and renewal, apps' call gate), typed on ioredis's command interface as its documentation shows.
declare module 'ioredis' {
  interface RedisCommander<Context> {
    inboxReplace(eventsKey: string, seq: string, json: string): Result<number, Context>;
    inboxAppend(metaKey: string, eventsKey: string, nowMs: number, json: string, maxEvents: number, maxAgeMs: number): Result<number, Context>;
    lockRelease(key: string, token: string): Result<number, Context>;
    appCallAdmit(openKey: string, probeKey: string, inflightKey: string, now: number, openMs: number, callId: string, deadline: number, maxConcurrent: number, probeTtlMs: number): Result<string, Context>;
    appCallSettle(openKey: string, probeKey: string, inflightKey: string, failuresKey: string, now: number, callId: string, failed: string, wasProbe: string, windowMs: number, threshold: number): Result<number, Context>;
    lockRenew(key: string, token: string, ttlMs: string): Result<number, Context>;
  }
}
