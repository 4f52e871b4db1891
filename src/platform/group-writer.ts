/** One item waiting in a GroupWriter, and how to answer whoever waits for it. */
export interface Waiter<I, O> {
  item: I;
  resolve: (outcome: O) => void;
  reject: (error: unknown) => void;
}

/**
 * Group commit: items added while a group is being written wait and are written together in the
 * next group (at most `limit`), by one call of `write` that answers each waiter on its own. Alone an
 * item goes at once (in the next microtask, with whatever was added in the same turn), so a quiet
 * process adds no wait; under load many items share each database command. One group at a time per
 * writer. `write` answers every waiter (it may answer some later, after it returns); when it throws,
 * those not answered yet get its error.
 *
 * With `lingerMs`, the first item waits that long for others before its group is written (writes
 * nobody waits for, which a burst then shares even when each alone would find the writer idle);
 * `flush` writes what waits at once (a process stopping).
 */
export class GroupWriter<I, O> {
  private readonly waiting: Waiter<I, O>[] = [];
  private writing: Promise<void> | null = null;
  private lingering: NodeJS.Timeout | null = null;
  /** Groups written and the items they held since the process started (entries per group under load). */
  readonly written = { groups: 0, items: 0 };

  constructor(
    private readonly write: (group: Waiter<I, O>[]) => Promise<void>,
    private readonly limit = 64,
    private readonly lingerMs = 0,
  ) {}

  add(item: I): Promise<O> {
    return this.addAll([item])[0] as Promise<O>;
  }

  /** Items added in one call are written in the same group, in their order (while they fit in `limit`). */
  addAll(items: I[]): Promise<O>[] {
    const outcomes = items.map((item) => new Promise<O>((resolve, reject) => this.waiting.push({ item, resolve, reject })));
    if (this.writing || this.lingering) return outcomes;
    if (this.lingerMs > 0) {
      this.lingering = setTimeout(() => void this.flush(), this.lingerMs);
      // A process does not stay up for it: one stopping flushes.
      this.lingering.unref();
    } else this.startDrain(() => new Promise<void>((resolve) => queueMicrotask(resolve)));
    return outcomes;
  }

  /** Writes every item waiting now (and any added meanwhile), and answers when they are written. */
  async flush(): Promise<void> {
    if (this.lingering) {
      clearTimeout(this.lingering);
      this.lingering = null;
    }
    while (this.writing || this.waiting.length > 0) {
      if (!this.writing) this.startDrain(async () => {});
      await this.writing;
    }
  }

  /** Drains after `first`; `writing` is cleared in the same turn the last group ends (an item added after it starts a drain of its own). */
  private startDrain(first: () => Promise<void>): void {
    this.writing = (async () => {
      await first();
      try {
        while (this.waiting.length > 0) {
          const group = this.waiting.splice(0, this.limit);
          this.written.groups++;
          this.written.items += group.length;
          try {
            await this.write(group);
          } catch (error) {
            // Settled promises ignore a second answer: only those not answered yet get the error.
            for (const waiter of group) waiter.reject(error);
          }
        }
      } finally {
        this.writing = null;
      }
    })();
  }
}

/** The indexes of a bulk write's items that failed with their own error (`writeErrors`), or null when the whole write failed. */
export function failedItems(error: unknown): Map<number, unknown> | null {
  const listed = typeof error === 'object' && error !== null && 'writeErrors' in error ? (error as { writeErrors: unknown }).writeErrors : undefined;
  if (!Array.isArray(listed)) return null;
  return new Map(listed.map((writeError: { index?: unknown }) => [Number(writeError.index), writeError]));
}

/**
 * A GroupWriter's `write` for one unordered bulk write of the whole group (`bulk` gets the items in
 * order): each waiter gets its own item's write error, or is answered done.
 */
export function bulkOf<I>(bulk: (items: I[]) => Promise<unknown>): (group: Waiter<I, void>[]) => Promise<void> {
  return async (group) => {
    let failed: Map<number, unknown> = new Map();
    try {
      await bulk(group.map(({ item }) => item));
    } catch (error) {
      failed = failedItems(error) ?? new Map(group.map((_, i) => [i, error]));
    }
    group.forEach((waiter, i) => (failed.has(i) ? waiter.reject(failed.get(i)) : waiter.resolve()));
  };
}

/**
 * A GroupWriter's `write` for reads: one `read` for every waiter's question at once (`read` gets them
 * in order and merges them into one query), each waiter answered with the documents its own question
 * `matches`. Concurrent requests that each read a few documents then share one database command.
 */
export function readsOf<Q, D>(read: (questions: Q[]) => Promise<D[]>, matches: (doc: D, question: Q) => boolean): (group: Waiter<Q, D[]>[]) => Promise<void> {
  return async (group) => {
    const docs = await read(group.map(({ item }) => item));
    for (const { item, resolve } of group) resolve(docs.filter((doc) => matches(doc, item)));
  };
}
