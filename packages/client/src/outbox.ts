import { ApiError, OfflineError, SignedOutError } from './errors.js';
import type { KeyValueStore } from './store.js';

/** A message waiting to be sent, as kept in the store. */
export interface QueuedMessage {
  clientMessageId: string;
  roomId: string;
  body: Record<string, unknown>;
  queuedAt: string;
}

type Post = (item: QueuedMessage) => Promise<string>;

/**
 * Messages waiting to be sent, in the order they were written, kept in the store so a closed app sends
 * them when it opens again. One is sent at a time; each carries its `clientMessageId` (and an
 * `Idempotency-Key` made from it), so sending it again after a lost answer gives the first message's id
 * and never a second message. Offline, the queue waits and drains in order when `kick`ed.
 */
export class SendQueue {
  private items: QueuedMessage[] = [];
  private readonly waiting = new Map<string, { resolve: (id: string) => void; reject: (error: unknown) => void }>();
  private draining = false;
  private paused = true;

  constructor(
    private readonly store: KeyValueStore,
    private readonly key: string,
    private readonly post: Post,
    private readonly sent: (item: QueuedMessage, messageId: string) => Promise<void>,
    private readonly failed: (item: QueuedMessage, error: ApiError | SignedOutError) => Promise<void>,
    /** Told when the service could not be reached: the queue waits for the next `kick`. */
    private readonly offline: () => void,
  ) {}

  get pending(): readonly QueuedMessage[] {
    return this.items;
  }

  async load(): Promise<void> {
    const saved = await this.store.get(this.key);
    this.items = saved ? (JSON.parse(saved) as QueuedMessage[]) : [];
  }

  async add(item: QueuedMessage): Promise<string> {
    this.items.push(item);
    await this.save();
    const done = new Promise<string>((resolve, reject) => this.waiting.set(item.clientMessageId, { resolve, reject }));
    // Also told through the client's `send-failed` event: an app that does not wait for this promise gets no unhandled rejection.
    done.catch(() => undefined);
    this.kick();
    return done;
  }

  /** Sends what waits (when not paused and not already sending). */
  kick(): void {
    this.paused = false;
    if (!this.draining) void this.drain();
  }

  pause(): void {
    this.paused = true;
  }

  /** The session ended: nothing that waits can be sent any more. */
  async abandon(reason: SignedOutError): Promise<void> {
    const items = this.items;
    this.items = [];
    await this.store.delete(this.key);
    for (const item of items) await this.settle(item, reason);
  }

  private async drain(): Promise<void> {
    this.draining = true;
    try {
      while (!this.paused && this.items.length > 0) {
        const item = this.items[0]!;
        let messageId: string;
        try {
          messageId = await this.post(item);
        } catch (error) {
          if (error instanceof OfflineError || (error instanceof ApiError && (error.status >= 500 || error.status === 429 || error.code === 'IDEMPOTENCY_KEY_IN_USE'))) {
            this.paused = true;
            this.offline();
            return;
          }
          if (error instanceof SignedOutError) return;
          this.items.shift();
          await this.save();
          await this.settle(item, error instanceof ApiError ? error : new ApiError(0, 'CLIENT_ERROR', String(error)));
          continue;
        }
        this.items.shift();
        await this.save();
        this.waiting.get(item.clientMessageId)?.resolve(messageId);
        this.waiting.delete(item.clientMessageId);
        await this.sent(item, messageId);
      }
    } finally {
      this.draining = false;
    }
  }

  private async settle(item: QueuedMessage, error: ApiError | SignedOutError): Promise<void> {
    this.waiting.get(item.clientMessageId)?.reject(error);
    this.waiting.delete(item.clientMessageId);
    await this.failed(item, error);
  }

  private save(): Promise<void> {
    return this.items.length === 0 ? this.store.delete(this.key) : this.store.set(this.key, JSON.stringify(this.items));
  }
}
