import type { DeviceEvents } from '../platform/device-events.js';
import type { Platform } from '../platform/platform.js';
import type { UserReads } from '../users/index.js';
import { BiometricService } from './biometric.service.js';
import { DevicesRepo } from './devices.repo.js';
import { DevicesService } from './devices.service.js';

/** Devices: the sessions of an account, their push tokens, and revocation (told on the domain-event bus). */
export function devicesArea(p: Platform) {
  const repo = new DevicesRepo(p.db, p.cache);
  /** The user's devices for their data export: names and times, never a token. */
  const exportOf = async (userId: string) =>
    (await repo.allOf(userId)).map((device) => ({
      id: device._id,
      name: device.name,
      platform: device.platform,
      createdAt: device.createdAt.toISOString(),
      lastSeenAt: device.lastSeenAt.toISOString(),
      revokedAt: device.revokedAt?.toISOString() ?? null,
      pushEnabled: device.pushToken !== null,
      biometricKeyEnrolled: Boolean(device.biometricKey),
    }));
  return { repos: { devices: repo }, devices: new DevicesService(repo, p.domainEvents, p.clock), exportOf };
}
export type DevicesArea = ReturnType<typeof devicesArea>;

/** Biometric keys of devices, and the confirmation check later features use. */
export function biometricArea(p: Platform, deps: { devices: DevicesRepo; users: UserReads; events: DeviceEvents }) {
  return {
    biometric: new BiometricService({
      devices: deps.devices,
      users: deps.users,
      codes: p.codes,
      ephemeral: p.ephemeral,
      keys: p.keys.biometric,
      sms: p.sms,
      events: deps.events,
      appName: p.config.TOTP_ISSUER,
      clock: p.clock,
    }),
  };
}

// What other areas use of this one (they import only this file).
export type { BiometricService } from './biometric.service.js';
export { DEVICE_PLATFORMS } from './devices.repo.js';
export type { DeviceDoc, DevicePlatform, DevicesRepo } from './devices.repo.js';
export type { DevicesService } from './devices.service.js';
export { parsePublicKey, verifySignature } from './signatures.js';

/** What other areas read of devices: one device, a user's active ones. */
export type DeviceReads = Pick<import('./devices.repo.js').DevicesRepo, 'findById' | 'findActive' | 'isActive' | 'listActiveByUser'>;

/** The push area also clears a token APNs or FCM reported invalid. */
export type DevicePushTokens = DeviceReads & Pick<import('./devices.repo.js').DevicesRepo, 'setPushToken' | 'setVoipPushToken' | 'pushableOf'>;
