import type { KeyValueStore } from './store.js';

/** A device event as the hub sends it. */
export interface Envelope {
  seq: number;
  at: string;
  data: unknown;
}

const ACK_DELAY_MS = 200;
const ACK_EVERY = 100;

/**
 * The device's inbox on this side: events handled one at a time in `seq` order, each once (a replay of
 * one already handled is dropped), the highest handled kept in the store and acknowledged to the hub
 * (`inbox.ack`, batched), so the next connection starts after it. `inbox.resync-required` moves the
 * position to its own `seq`, also backwards (an inbox that Redis lost starts again lower).
 */
export class InboxReader {
  /** The highest `seq` handled. */
  handled = 0;
  private queue: { name: string; envelope: Envelope }[] = [];
  private running = false;
  private flushTimer: ReturnType<typeof setTimeout> | null = null;
  private unacked = 0;
  private waiters: { seq: number; resolve: () => void }[] = [];

  constructor(
    private readonly store: KeyValueStore,
    private readonly key: string,
    private readonly handle: (name: string, envelope: Envelope) => Promise<void>,
    private readonly ack: (seq: number) => void,
  ) {}

  async load(): Promise<void> {
    this.handled = Number((await this.store.get(this.key)) ?? 0) || 0;
  }

  async forget(): Promise<void> {
    this.queue = [];
    this.handled = 0;
    this.cancelFlush();
    await this.store.delete(this.key);
  }

  push(name: string, envelope: Envelope): void {
    this.queue.push({ name, envelope });
    if (!this.running) void this.run();
  }

  /** The connection dropped: what it brought and was not handled yet comes again on the next one. */
  dropPending(): void {
    this.queue = [];
  }

  /** Resolves once every event up to `seq` was handled (or a resync set the position anew). */
  reached(seq: number): Promise<void> {
    if (this.handled >= seq) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ seq, resolve }));
  }

  /** Writes the position and acknowledges it now (before closing). */
  async flush(): Promise<void> {
    this.cancelFlush();
    if (this.unacked === 0) return;
    this.unacked = 0;
    this.ack(this.handled);
    await this.store.set(this.key, String(this.handled));
  }

  private async run(): Promise<void> {
    this.running = true;
    try {
      for (let next = this.queue.shift(); next; next = this.queue.shift()) {
        const { name, envelope } = next;
        const resync = name === 'inbox.resync-required';
        if (!resync && envelope.seq <= this.handled) continue;
        await this.handle(name, envelope);
        this.handled = envelope.seq;
        this.unacked++;
        this.settle(resync);
        if (this.unacked >= ACK_EVERY) await this.flush();
        else this.flushTimer ??= setTimeout(() => void this.flush(), ACK_DELAY_MS);
      }
    } finally {
      this.running = false;
    }
  }

  private settle(all: boolean): void {
    const ready = this.waiters.filter((waiter) => all || waiter.seq <= this.handled);
    this.waiters = this.waiters.filter((waiter) => !ready.includes(waiter));
    for (const waiter of ready) waiter.resolve();
  }

  private cancelFlush(): void {
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.flushTimer = null;
  }
}
