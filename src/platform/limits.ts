import type { EphemeralStore } from './ephemeral.js';

/** How long slots taken by a process that died stay taken. */
const SLOT_TTL_SECONDS = 60;

interface LimitOptions {
  limit: number;
  /** Slots this request takes (1 unless said). */
  n?: number;
  settled: () => Promise<number>;
  refuse: () => Error;
}

/** How many times, and how far apart, a call at the edge looks again before refusing (see takeWithinLimit). */
const LOOKS_AGAIN = 4;
const LOOK_AGAIN_MS = 15;

/**
 * An "at most `limit`" over records kept in the database, made to hold under concurrency: `n` slots
 * are taken in Redis first (atomic), then the settled count is read; when the settled count and every
 * slot taken (this call's and those of calls under way) pass the limit, `refuse` is thrown. Else the
 * slots stay taken until the returned release is called, once the records are in the settled count.
 * Never two admitted past the limit. A call that finished a moment ago is counted twice until it
 * gives its slot back (its record settled, its slot not yet released): a call that would be refused
 * while the settled count alone leaves room looks again, a few times over a few milliseconds, before
 * refusing (two calls at the edge still refuse each other while both hold their slots).
 */
export async function takeWithinLimit(ephemeral: EphemeralStore, key: string, options: LimitOptions): Promise<() => Promise<void>> {
  const n = options.n ?? 1;
  const taken = await ephemeral.takeSlots(key, n, SLOT_TTL_SECONDS);
  const release = () => ephemeral.releaseSlots(key, n);
  try {
    let settled = await options.settled();
    let slots = taken;
    for (let look = 0; settled + slots > options.limit && settled + n <= options.limit && look < LOOKS_AGAIN; look++) {
      await new Promise((resolve) => setTimeout(resolve, LOOK_AGAIN_MS));
      [settled, slots] = await Promise.all([options.settled(), ephemeral.slotsTaken(key)]);
    }
    if (settled + slots > options.limit) throw options.refuse();
  } catch (error) {
    await release();
    throw error;
  }
  return release;
}

/** takeWithinLimit around one act: the slots are given back once `act` is done. */
export async function withinLimit<T>(ephemeral: EphemeralStore, key: string, options: LimitOptions, act: () => Promise<T>): Promise<T> {
  const release = await takeWithinLimit(ephemeral, key, options);
  try {
    return await act();
  } finally {
    await release();
  }
}
