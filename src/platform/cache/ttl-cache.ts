/**
 * A small in-process cache whose entries live `ttlMs` and which holds at most `maxEntries` (the
 * oldest go first). For values where a few seconds of staleness is harmless, or that writes clear
 * (see CacheBus).
 */
export class TtlCache<V> {
  private readonly entries = new Map<string, { value: V; expires: number }>();
  /** Counts `delete` calls: a load that overlapped one may have read what the deleting write replaced. */
  private deletions = 0;

  constructor(
    private readonly ttlMs: number,
    private readonly maxEntries = 10_000,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * The cached value, or `load()`'s, which is then cached unless an entry was deleted while it ran
   * (its read may predate the write that deleted it). A failed load caches nothing.
   */
  async get(key: string, load: () => Promise<V>): Promise<V> {
    const hit = this.entries.get(key);
    if (hit && hit.expires > this.now()) return hit.value;
    const deletionsBefore = this.deletions;
    const value = await load();
    if (this.deletions === deletionsBefore) this.set(key, value);
    return value;
  }

  /** The cached value, if any and not expired; never loads. */
  peek(key: string): V | undefined {
    const hit = this.entries.get(key);
    return hit && hit.expires > this.now() ? hit.value : undefined;
  }

  /** Keeps `value` under `key` (the oldest entry goes when full). */
  set(key: string, value: V): void {
    this.entries.delete(key);
    const oldest = this.entries.keys().next();
    if (this.entries.size >= this.maxEntries && !oldest.done) this.entries.delete(oldest.value);
    this.entries.set(key, { value, expires: this.now() + this.ttlMs });
  }

  delete(key: string): void {
    this.deletions++;
    this.entries.delete(key);
  }

  /** Drops every entry (loads under way are not kept either). */
  clear(): void {
    this.deletions++;
    this.entries.clear();
  }
}
