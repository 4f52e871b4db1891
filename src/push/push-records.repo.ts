import type { Collection, Db } from 'mongodb';
import type { PushMessage, PushTarget } from './push.js';

export interface RecordedPush {
  token: string;
  service: PushTarget['service'];
  message: PushMessage;
  at: Date;
}

/** What the local push provider "sent" (`push_records`), for development and the tests to read. */
export class PushRecordsRepo {
  private readonly records: Collection<RecordedPush>;
  /** Records waiting for the next write, with the sends waiting on it. */
  private pending: { push: RecordedPush; done: () => void; failed: (error: unknown) => void }[] = [];
  private timer: NodeJS.Timeout | null = null;

  constructor(db: Db) {
    this.records = db.collection<RecordedPush>('push_records');
  }

  /**
   * Stores one push; resolves once it is written. Pushes that arrive together (a message's fan-out
   * sends dozens at once) are written together, one insert per 500 or per 10 ms, as a real provider's
   * connection carries many requests at once.
   */
  record(push: RecordedPush): Promise<void> {
    return new Promise((done, failed) => {
      this.pending.push({ push, done, failed });
      if (this.pending.length >= 500) this.flush();
      else this.timer ??= setTimeout(() => this.flush(), 10);
    });
  }

  private flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const batch = this.pending;
    this.pending = [];
    if (batch.length === 0) return;
    this.records.insertMany(batch.map((entry) => entry.push), { ordered: false }).then(
      () => batch.forEach((entry) => entry.done()),
      (error: unknown) => batch.forEach((entry) => entry.failed(error)),
    );
  }
}
