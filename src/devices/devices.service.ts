import type { z } from 'zod';
import type { DomainEvents } from '../platform/domain-events.js';
import type { Principal } from '../platform/principal.js';
import type { DevicesRepo, PushTokenRecord } from './devices.repo.js';
import { DevicesErrors } from './devices.errors.js';
import type { DeviceDtoSchema } from './devices.schemas.js';

/** As the DeviceDto record of the OpenAPI document. */
export type DeviceView = z.infer<typeof DeviceDtoSchema>;

export class DevicesService {
  constructor(
    private readonly devices: DevicesRepo,
    private readonly domainEvents: DomainEvents,
    private readonly clock: () => Date = () => new Date(),
  ) {}

  /** Ids of the user's active devices: where device events to that user go. */
  activeDeviceIds(userId: string): Promise<string[]> {
    return this.devices.activeIdsOf(userId);
  }

  async list(principal: Principal): Promise<DeviceView[]> {
    const devices = await this.devices.listActiveByUser(principal.userId);
    return devices.map((device) => ({
      id: device._id,
      name: device.name,
      platform: device.platform,
      createdAt: device.createdAt.toISOString(),
      lastSeenAt: device.lastSeenAt.toISOString(),
      current: device._id === principal.deviceId,
      pushEnabled: device.pushToken !== null,
      voipPushEnabled: device.voipPushToken !== null,
    }));
  }

  /** Revokes one of the caller's devices (the current one included): its tokens stop working at once. */
  async revoke(principal: Principal, deviceId: string): Promise<void> {
    const revoked = await this.revokeDevice(deviceId, principal.userId);
    if (!revoked) throw DevicesErrors.DEVICE_NOT_FOUND();
  }

  /** The one place a device is revoked: sign-out, revocation and refresh-token reuse all come here. */
  async revokeDevice(deviceId: string, userId: string): Promise<boolean> {
    const revoked = await this.devices.revoke(deviceId, userId, this.clock());
    // Other areas react: sockets closed, inbox dropped, calls hung up.
    if (revoked) await this.domainEvents.emit('device.revoked', { deviceId, userId });
    return revoked;
  }

  async setPushToken(principal: Principal, input: { token: string | null; provider: PushTokenRecord['provider'] }): Promise<void> {
    const record = input.token === null ? null : { token: input.token, provider: input.provider, updatedAt: this.clock() };
    await this.devices.setPushToken(principal.deviceId, record);
    if (record) await this.domainEvents.emit('device.push-token-set', { deviceId: principal.deviceId, userId: principal.userId });
  }

  async setVoipPushToken(principal: Principal, input: { token: string | null }): Promise<void> {
    const record = input.token === null ? null : { token: input.token, updatedAt: this.clock() };
    await this.devices.setVoipPushToken(principal.deviceId, record);
  }

  /** Every active device of a user revoked (sockets closed, tokens refused) and every push token dropped. */
  async revokeAllOf(userId: string): Promise<void> {
    for (const deviceId of await this.devices.activeIdsOf(userId)) await this.revokeDevice(deviceId, userId);
    await this.devices.dropPushTokensOf(userId);
  }

  /** A deleted account's devices, once revoked: their names blanked (revoked records stay, nameless). */
  async eraseOf(userId: string): Promise<void> {
    await this.devices.eraseNamesOf(userId);
  }

  /** The account's list of devices removed: the erasure's last step (the steps before read it). */
  async forgetListOf(userId: string): Promise<void> {
    await this.devices.forgetListOf(userId);
  }
}
