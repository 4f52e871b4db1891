import type { EphemeralStore } from './ephemeral.js';

/** How long slots taken by a process that died stay taken. */
const SLOT_TTL_SECONDS = 60;

/**
 * An "at most `limit`" over records kept in the database, made to hold under concurrency: `n` slots
 * are taken in Redis first (atomic), then the settled count is read; when the settled count and every
 * slot taken (this call's and those of calls under way) pass the limit, `refuse` is thrown, else `act`
 * runs. Slots are given back once `act` is done, when its records are in the settled count. Two calls
 * at the edge can both be refused (each counts the other's slot), never both admitted.
 */
export async function withinLimit<T>(
  ephemeral: EphemeralStore,
  key: string,
  options: { limit: number; n?: number; settled: () => Promise<number>; refuse: () => Error },
  act: () => Promise<T>,
): Promise<T> {
  const n = options.n ?? 1;
  const taken = await ephemeral.takeSlots(key, n, SLOT_TTL_SECONDS);
  try {
    if ((await options.settled()) + taken > options.limit) throw options.refuse();
    return await act();
  } finally {
    await ephemeral.releaseSlots(key, n);
  }
}

/** The two halves of withinLimit, for an act that spans several calls (room invitations: checked, then made). */
export async function takeWithinLimit(ephemeral: EphemeralStore, key: string, options: { limit: number; settled: () => Promise<number>; refuse: () => Error }): Promise<() => Promise<void>> {
  const taken = await ephemeral.takeSlots(key, 1, SLOT_TTL_SECONDS);
  const release = () => ephemeral.releaseSlots(key, 1);
  try {
    if ((await options.settled()) + taken > options.limit) throw options.refuse();
  } catch (error) {
    await release();
    throw error;
  }
  return release;
}
