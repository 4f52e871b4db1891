import type { Collection, Db } from 'mongodb';
import type { PushMessage, PushProvider, PushResult, PushTarget } from './push.js';

export interface RecordedPush {
  token: string;
  service: PushTarget['service'];
  message: PushMessage;
  at: Date;
}

/**
 * Development and test provider: records each push in the `push_records` collection instead of
 * sending it, and answers like the real services do for tokens marked invalid (prefix "invalid-").
 */
export class LocalPushProvider implements PushProvider {
  readonly name = 'local';
  private readonly records: Collection<RecordedPush>;

  constructor(db: Db) {
    this.records = db.collection<RecordedPush>('push_records');
  }

  async send(target: PushTarget, message: PushMessage): Promise<PushResult> {
    if (target.token.startsWith('invalid-')) return { ok: false, tokenInvalid: true, reason: target.service === 'APNS' ? 'BadDeviceToken' : 'UNREGISTERED' };
    await this.records.insertOne({ token: target.token, service: target.service, message, at: new Date() });
    return { ok: true };
  }
}
