import type { DeviceEvents } from '../platform/device-events.js';
import type { Platform } from '../platform/platform.js';
import type { UserReads } from '../users/index.js';
import { narrow } from '../platform/narrow.js';
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
  const reads = narrow(repo, ['findById', 'findActive', 'isActive', 'listActiveByUser']);
  return {
    repos: { devices: repo },
    devices: new DevicesService(repo, p.domainEvents, p.clock),
    exportOf,
    // What other areas may do with devices, each a small interface of its own (never the repository).
    reads,
    /** The push area sets and clears push tokens, and reads who can be pushed. */
    pushTokens: { ...reads, ...narrow(repo, ['setPushToken', 'setVoipPushToken', 'pushableOf']) },
    /** Sign-in opens a device's session, rotates its refresh token and ends it. */
    sessions: narrow(repo, ['findById', 'isActive', 'insert', 'revoke', 'rotateRefreshToken']),
    /** Every device id an account ever had (its deletion forgets their keys). */
    allIdsOf: (userId: string) => repo.allIdsOf(userId),
    biometricKeys: narrow(repo, ['findActive', 'enrolledKeyOf', 'swapBiometricKey']),
  };
}
export type DevicesArea = ReturnType<typeof devicesArea>;

/** Biometric keys of devices, and the confirmation check later features use. */
export function biometricArea(p: Platform, deps: { devices: BiometricKeys; users: UserReads; events: DeviceEvents }) {
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
export type { DeviceDoc, DevicePlatform } from './devices.repo.js';
export type { DevicesService } from './devices.service.js';
export { parsePublicKey, verifySignature } from './signatures.js';

/** What other areas read of devices: one device, a user's active ones. */
export type DeviceReads = DevicesArea['reads'];

/** The push area also clears a token APNs or FCM reported invalid. */
export type DevicePushTokens = DevicesArea['pushTokens'];
/** Sign-in's hold on a device's session. */
export type DeviceSessions = DevicesArea['sessions'];
/** A device's biometric key, read and swapped. */
export type BiometricKeys = DevicesArea['biometricKeys'];
