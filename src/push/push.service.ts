import type { PushJob } from '../platform/queues.js';
import type { DeviceInbox, InboxEntry } from '../inbox/index.js';
import type { PresenceStore } from '../presence/index.js';
import type { PushMessage, PushProvider, PushTarget } from './push.js';
import type { DeviceDoc, DevicePushTokens } from '../devices/index.js';
export type PushOutcome = 'sent' | 'device-gone' | 'online' | 'already-handled' | 'no-token' | 'token-invalid';

/** Thrown when the push service failed in a way worth retrying (the worker retries with backoff). */
export class PushRetryableError extends Error {}

function render(entry: InboxEntry, kind: PushJob['kind']): PushMessage {
  const data: Record<string, string> = { event: entry.event, seq: String(entry.seq), at: entry.at };
  for (const [key, value] of Object.entries(entry.data)) {
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') data[key] = String(value);
  }
  if (kind === 'voip') return { kind, data, ttlSeconds: 30, collapseId: data.callId };
  const sender = entry.event === 'contact.request' ? entry.data.sender : undefined;
  const invitation = entry.event === 'room.invitation' ? entry.data : undefined;
  const inviter = invitation?.inviter.displayName ?? 'Someone';
  const alerts: Record<string, { title: string; body: string }> = {
    'device.added': { title: 'New sign-in', body: `${data.name ?? 'A new device'} signed in to your account` },
    'contact.request': { title: 'Connection request', body: `${sender?.displayName ?? 'Someone'} wants to connect with you` },
    'room.invitation':
      invitation?.roomType === 'DIRECT'
        ? { title: 'Message request', body: `${inviter} wants to send you messages` }
        : { title: 'Room invitation', body: `${inviter} invites you to ${invitation?.roomName ?? 'a room'}` },
    'device.biometric-key-removed': { title: 'Security', body: `The biometric key of ${data.name ?? 'a device'} was removed` },
    'wallet.limit-request-decided': { title: 'Sending limit', body: data.status === 'APPROVED' ? 'Your new sending limit is approved' : 'Your sending limit request was refused' },
    'wallet.payment-requested': { title: 'Payment request', body: `You are asked to pay ${data.amount ?? ''} ${data.currency ?? ''}`.trim() },
    'wallet.deposit-received': { title: 'Deposit received', body: `${data.amount ?? ''} ${data.currency ?? ''} arrived in your wallet`.trim() },
    'message.reaction': { title: 'Reaction', body: `Someone reacted ${data.emoji ?? ''} to your message`.replace('  ', ' ') },
    'wallet.transfer-received': { title: 'Payment received', body: `You received ${data.amount ?? ''} ${data.currency ?? ''}`.trim() },
  };
  const alert = alerts[entry.event] ?? { title: 'Chat', body: 'You have a new notification' };
  // Reactions to one message replace each other on the phone: one notification per message.
  return { kind, alert, data, ttlSeconds: 86_400, ...(entry.event === 'message.reaction' ? { collapseId: `reaction-${data.messageId}` } : {}) };
}

/** Pushes one stored device event to a device that had no live socket when it was emitted. */
export class PushService {
  constructor(
    private readonly devices: DevicePushTokens,
    private readonly inbox: DeviceInbox,
    private readonly presence: PresenceStore,
    private readonly providerFor: (service: PushTarget['service']) => PushProvider | null,
  ) {}

  private target(device: DeviceDoc, kind: PushJob['kind']): { target: PushTarget; field: 'pushToken' | 'voipPushToken' } | null {
    // VoIP rings go through PushKit on iOS; elsewhere a high-priority data push on the normal token does it.
    if (kind === 'voip' && device.voipPushToken) return { target: { token: device.voipPushToken.token, service: 'APNS' }, field: 'voipPushToken' };
    if (device.pushToken) return { target: { token: device.pushToken.token, service: device.pushToken.provider }, field: 'pushToken' };
    return null;
  }

  async deliver(request: PushJob): Promise<PushOutcome> {
    const device = await this.devices.findById(request.deviceId);
    if (!device || device.revokedAt) return 'device-gone';
    // The device came back meanwhile: its socket has the event from the inbox.
    if (await this.presence.isOnline(device._id)) return 'online';
    const [entry] = await this.inbox.readAfter(device._id, request.seq - 1, 1);
    if (!entry || entry.seq !== request.seq) return 'already-handled';
    const chosen = this.target(device, request.kind);
    if (!chosen) return 'no-token';
    const provider = this.providerFor(chosen.target.service);
    if (!provider) return 'no-token';
    const result = await provider.send(chosen.target, render(entry, request.kind));
    if (result.ok) return 'sent';
    if (result.tokenInvalid) {
      // The push service says this token will never work again: stop using it.
      if (chosen.field === 'pushToken') await this.devices.setPushToken(device._id, null);
      else await this.devices.setVoipPushToken(device._id, null);
      return 'token-invalid';
    }
    throw new PushRetryableError(`push failed: ${result.reason}`);
  }
}
