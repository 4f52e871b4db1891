import type { PushMessage, PushProvider, PushResult, PushTarget } from './push.js';
import type { PushRecordsRepo } from './push-records.repo.js';

/**
 * Development and test provider: records each push in the `push_records` collection instead of
 * sending it, and answers like the real services do for tokens marked invalid (prefix "invalid-").
 */
export class LocalPushProvider implements PushProvider {
  readonly name = 'local';

  constructor(private readonly records: PushRecordsRepo) {}

  async send(target: PushTarget, message: PushMessage): Promise<PushResult> {
    if (target.token.startsWith('invalid-')) return { ok: false, tokenInvalid: true, reason: target.service === 'APNS' ? 'BadDeviceToken' : 'UNREGISTERED' };
    await this.records.record({ token: target.token, service: target.service, message, at: new Date() });
    return { ok: true };
  }
}
