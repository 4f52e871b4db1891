import type { PushMessage, PushProvider, PushResult, PushTarget } from './push.js';
import type { PushRecordsRepo } from './push-records.repo.js';

/**
 * Development and test provider: records each push in the `push_records` collection instead of
 * sending it, and answers like the real services do for tokens marked invalid (prefix "invalid-").
 * With a quota (`ratePerSecond` > 0) it throttles as they do: past the quota of the current second a
 * push is refused with FCM's QUOTA_EXCEEDED or APNs's TooManyRequests and told when to come back,
 * and not recorded (a refused send is not delivered).
 */
export class LocalPushProvider implements PushProvider {
  readonly name = 'local';
  private window = { second: 0, sent: 0 };

  constructor(
    private readonly records: PushRecordsRepo,
    private readonly ratePerSecond = 0,
  ) {}

  async send(target: PushTarget, message: PushMessage): Promise<PushResult> {
    if (target.token.startsWith('invalid-')) return { ok: false, tokenInvalid: true, reason: target.service === 'APNS' ? 'BadDeviceToken' : 'UNREGISTERED' };
    if (this.ratePerSecond > 0) {
      const now = Date.now();
      const second = Math.floor(now / 1000);
      if (second !== this.window.second) this.window = { second, sent: 0 };
      if (this.window.sent >= this.ratePerSecond) {
        return { ok: false, tokenInvalid: false, reason: target.service === 'APNS' ? 'TooManyRequests' : 'QUOTA_EXCEEDED', retryAfterMs: (second + 1) * 1000 - now };
      }
      this.window.sent++;
    }
    await this.records.record({ token: target.token, service: target.service, message, at: new Date() });
    return { ok: true };
  }
}
