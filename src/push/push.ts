/** One push to one device token. `data` is delivered to the app; `alert` is shown by the OS when present. */
export interface PushMessage {
  kind: 'alert' | 'voip';
  alert?: { title: string; body: string };
  data: Record<string, string>;
  /** Seconds the push service may hold the message for an unreachable device. */
  ttlSeconds: number;
  collapseId?: string;
  /** The app icon's number: the member's unread total. */
  badge?: number;
  /** APNs `mutable-content`: the phone's extension may change the alert (decrypt an end-to-end encrypted message). */
  mutableContent?: boolean;
  /** The recipient is in do-not-disturb or quiet hours: shown without sound or interruption (the badge still moves). */
  quiet?: boolean;
}

export interface PushTarget {
  /** APNs device or VoIP token, or FCM registration token. */
  token: string;
  service: 'APNS' | 'FCM';
}

/**
 * A refusal with `retryAfterMs` is for now (throttled, or the service briefly unavailable): try again
 * after that long (0: at once, with backoff); without it, the refusal stands (`tokenInvalid`: for good).
 */
export type PushResult = { ok: true } | { ok: false; tokenInvalid: boolean; reason: string; retryAfterMs?: number };

export interface PushProvider {
  readonly name: string;
  send(target: PushTarget, message: PushMessage): Promise<PushResult>;
  close?(): Promise<void>;
}
