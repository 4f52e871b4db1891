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

  constructor(db: Db) {
    this.records = db.collection<RecordedPush>('push_records');
  }

  async record(push: RecordedPush): Promise<void> {
    await this.records.insertOne(push);
  }
}
