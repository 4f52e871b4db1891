import type { Principal } from '../platform/principal.js';
import { badRequest } from '../platform/errors.js';
import type { DeviceDoc, DevicesRepo, PushTokenRecord } from './devices.repo.js';

export interface DeviceView {
  id: string;
  name: string;
  platform: DeviceDoc['platform'];
  createdAt: string;
  lastSeenAt: string;
  current: boolean;
  pushEnabled: boolean;
  voipPushEnabled: boolean;
}

/** Called after a device is revoked, so live sockets holding it can be closed. */
export type DeviceRevokedListener = (device: { deviceId: string; userId: string }) => Promise<void> | void;

export class DevicesService {
  private readonly revokedListeners: DeviceRevokedListener[] = [];

  constructor(
    private readonly devices: DevicesRepo,
    private readonly clock: () => Date = () => new Date(),
  ) {}

  onRevoked(listener: DeviceRevokedListener): void {
    this.revokedListeners.push(listener);
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
    if (!revoked) throw badRequest('DEVICE_NOT_FOUND', 'No such active device among yours');
  }

  /** The one place a device is revoked: sign-out, revocation and refresh-token reuse all come here. */
  async revokeDevice(deviceId: string, userId: string): Promise<boolean> {
    const revoked = await this.devices.revoke(deviceId, userId, this.clock());
    if (revoked) {
      for (const listener of this.revokedListeners) await listener({ deviceId, userId });
    }
    return revoked;
  }

  async setPushToken(principal: Principal, input: { token: string | null; provider: PushTokenRecord['provider'] }): Promise<void> {
    const record = input.token === null ? null : { token: input.token, provider: input.provider, updatedAt: this.clock() };
    await this.devices.setPushToken(principal.deviceId, record);
  }

  async setVoipPushToken(principal: Principal, input: { token: string | null }): Promise<void> {
    const record = input.token === null ? null : { token: input.token, updatedAt: this.clock() };
    await this.devices.setVoipPushToken(principal.deviceId, record);
  }
}
