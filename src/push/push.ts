/** One push to one device token. `data` is delivered to the app; `alert` is shown by the OS when present. */
export interface PushMessage {
  kind: 'alert' | 'voip';
  alert?: { title: string; body: string };
  data: Record<string, string>;
  /** Seconds the push service may hold the message for an unreachable device. */
  ttlSeconds: number;
  collapseId?: string;
}

export interface PushTarget {
  /** APNs device or VoIP token, or FCM registration token. */
  token: string;
  service: 'APNS' | 'FCM';
}

export type PushResult = { ok: true } | { ok: false; tokenInvalid: boolean; reason: string };

export interface PushProvider {
  readonly name: string;
  send(target: PushTarget, message: PushMessage): Promise<PushResult>;
  close?(): Promise<void>;
}
