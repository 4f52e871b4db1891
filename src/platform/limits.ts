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

/**
 * An "at most `limit`" over records kept in the database, made to hold under concurrency: `n` slots
 * are taken in Redis first (atomic), then the settled count is read; when the settled count and every
 * slot taken (this call's and those of calls under way) pass the limit, `refuse` is thrown. Else the
 * slots stay taken until the returned release is called, once the records are in the settled count.
 * Two calls at the edge can both be refused (each counts the other's slot), never both admitted.
 */
export async function takeWithinLimit(ephemeral: EphemeralStore, key: string, options: LimitOptions): Promise<() => Promise<void>> {
  const n = options.n ?? 1;
  const taken = await ephemeral.takeSlots(key, n, SLOT_TTL_SECONDS);
  const release = () => ephemeral.releaseSlots(key, n);
  try {
    if ((await options.settled()) + taken > options.limit) throw options.refuse();
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
