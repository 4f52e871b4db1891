import type { Collection, Db } from 'mongodb';
import { findByIds } from '../platform/mongo.js';
import { sharedCache, type CacheBus, type SharedCache } from '../platform/cache/invalidation.js';

export const DEVICE_PLATFORMS = ['IOS', 'ANDROID', 'WEB', 'DESKTOP', 'OTHER'] as const;
export type DevicePlatform = (typeof DEVICE_PLATFORMS)[number];

export interface PushTokenRecord {
  token: string;
  provider: 'APNS' | 'FCM';
  updatedAt: Date;
}

export interface BiometricKeyRecord {
  /** Base64 SubjectPublicKeyInfo DER. */
  publicKey: string;
  algorithm: 'ECDSA_P256' | 'ED25519';
  enrolledAt: Date;
}

export interface DeviceDoc {
  _id: string;
  userId: string;
  name: string;
  platform: DevicePlatform;
  createdAt: Date;
  lastSeenAt: Date;
  revokedAt: Date | null;
  /** SHA-256 of the refresh token in force. */
  refreshTokenHash: string;
  refreshExpiresAt: Date;
  /** SHA-256 of spent refresh tokens: presenting one again means the token leaked. */
  spentRefreshHashes: string[];
  pushToken: PushTokenRecord | null;
  voipPushToken: { token: string; updatedAt: Date } | null;
  /** Enrolled biometric key; absent or null when none. */
  biometricKey?: BiometricKeyRecord | null;
}

const SPENT_HASHES_KEPT = 50;
/** The `user_devices` document saying the devices stored before the lists were listed (no user id starts with `~`). */
const LISTED_MARK = '~listed';

/**
 * The ids of a user's active devices, keyed by user id: "devices of these users" (a push's 500
 * recipients, a device event to a user) is then two reads by `_id` (the lists, then the devices), which
 * mongo-java-server answers from its `_id` index where a read by `userId` scans every device (661 ms
 * for 500 users among 10,000 devices, against 43 ms), and which a cluster sharded by these `_id`s
 * sends only to the shards holding them. A device's id is added before the device is stored and
 * taken out after it is revoked, so the list may name a device that is gone or revoked for a moment,
 * never miss an active one: readers check each device they read.
 */
interface UserDevicesDoc {
  _id: string;
  deviceIds: string[];
}

export class DevicesRepo {
  private readonly collection: Collection<DeviceDoc>;
  private readonly userDevices: Collection<UserDevicesDoc>;

  /** Device id → its user and enrolled biometric key while active, else null. */
  private readonly activeDevices: SharedCache<{ userId: string; key: BiometricKeyRecord | null } | null>;
  /** User id → the ids of their active devices (where device events to them go). */
  private readonly activeIds: SharedCache<string[]>;

  constructor(db: Db, bus?: CacheBus) {
    this.collection = db.collection<DeviceDoc>('devices');
    this.userDevices = db.collection<UserDevicesDoc>('user_devices');
    this.activeDevices = sharedCache(bus, 'device', 5_000);
    this.activeIds = sharedCache<string[]>(bus, 'user-devices', 5_000);
  }

  async ensureIndexes(): Promise<void> {
    await this.collection.createIndexes([{ key: { userId: 1, createdAt: -1 }, name: 'user_devices' }]);
    // The devices of a database from before the per-user lists are listed once, then the mark is
    // set (a start interrupted before it lists them again: adding to a list twice changes nothing).
    if (!(await this.userDevices.findOne({ _id: LISTED_MARK }))) {
      await this.backfillUserDevices();
      await this.userDevices.updateOne({ _id: LISTED_MARK }, { $set: { deviceIds: [] } }, { upsert: true });
    }
  }

  /** Every active device put on its user's list, a thousand at a time. */
  private async backfillUserDevices(): Promise<void> {
    let after = '';
    for (;;) {
      const page = await this.collection.find({ _id: { $gt: after }, revokedAt: null }, { projection: { _id: 1, userId: 1 } }).sort({ _id: 1 }).limit(1000).toArray();
      if (page.length === 0) return;
      const byUser = Map.groupBy(page, (device) => device.userId);
      await this.userDevices.bulkWrite(
        [...byUser].map(([userId, devices]) => ({ updateOne: { filter: { _id: userId }, update: { $addToSet: { deviceIds: { $each: devices.map((device) => device._id) } } }, upsert: true } })),
        { ordered: false },
      );
      after = page.at(-1)!._id;
    }
  }

  /** Stores a new device, on its user's list first (see UserDevicesDoc). */
  async insert(device: DeviceDoc): Promise<void> {
    await this.userDevices.updateOne({ _id: device.userId }, { $addToSet: { deviceIds: device._id } }, { upsert: true });
    await this.collection.insertOne(device);
    await this.activeIds.clear(device.userId);
  }

  /**
   * The active devices of `userIds`, through their lists (two reads by `_id`): whole, or only the
   * fields named (with `_id` and `userId`).
   */
  private async activeOf<K extends keyof DeviceDoc = keyof DeviceDoc>(userIds: readonly string[], fields?: readonly K[]): Promise<Pick<DeviceDoc, K | '_id' | 'userId'>[]> {
    if (userIds.length === 0) return [];
    const lists = await findByIds(this.userDevices, userIds);
    const owner = new Map(lists.flatMap((list) => list.deviceIds.map((deviceId) => [deviceId, list._id] as const)));
    const projection = fields && Object.fromEntries(['_id', 'userId', 'revokedAt', ...fields].map((field) => [field, 1]));
    const devices = await findByIds(this.collection, [...owner.keys()], projection);
    return devices.filter((device) => device.revokedAt === null && owner.get(device._id) === device.userId);
  }

  findById(id: string): Promise<DeviceDoc | null> {
    return this.collection.findOne({ _id: id });
  }

  /**
   * Whether the device belongs to `userId` and is not revoked: the check of every authenticated
   * request, served from a 5-second cache that revocation clears in every process.
   */
  async isActive(id: string, userId: string): Promise<boolean> {
    return (await this.activeDevice(id))?.userId === userId;
  }

  /**
   * The biometric key enrolled on the device (null: none) when the device is the user's and active;
   * undefined when it is not. From the same cache as `isActive`, which enrolment and removal clear
   * too: what every confirmed action (transfer, withdrawal, swap) reads.
   */
  async enrolledKeyOf(id: string, userId: string): Promise<BiometricKeyRecord | null | undefined> {
    const device = await this.activeDevice(id);
    return device && device.userId === userId ? device.key : undefined;
  }

  /**
   * The device's user and key while it is active, else null: 5 seconds per process, cleared in every
   * process by revocation and by a change of key. Looked up by `_id` alone and checked here:
   * mongo-java-server uses the `_id` index only for a filter on `_id` by itself (with more fields it
   * scans the collection).
   */
  private activeDevice(id: string): Promise<{ userId: string; key: BiometricKeyRecord | null } | null> {
    return this.activeDevices.get(id, async () => {
      const device = await this.collection.findOne({ _id: id }, { projection: { userId: 1, revokedAt: 1, biometricKey: 1 } });
      return device && device.revokedAt === null ? { userId: device.userId, key: device.biometricKey ?? null } : null;
    });
  }

  async findActive(id: string, userId: string): Promise<DeviceDoc | null> {
    const device = await this.collection.findOne({ _id: id });
    return device && device.userId === userId && device.revokedAt === null ? device : null;
  }

  /** The active devices of `userIds` that have a push token. */
  async pushableOf(userIds: string[]): Promise<Pick<DeviceDoc, '_id' | 'userId' | 'pushToken'>[]> {
    return (await this.activeOf(userIds, ['pushToken'])).filter((device) => device.pushToken !== null).map(({ _id, userId, pushToken }) => ({ _id, userId, pushToken }));
  }

  /**
   * The ids of the user's active devices, served from a 5-second cache that a new device or a
   * revocation clears in every process (a device event to a user reads them: every transfer, call, invitation…).
   */
  activeIdsOf(userId: string): Promise<string[]> {
    return this.activeIds.get(userId, async () => (await this.listActiveByUser(userId)).map((device) => device._id));
  }

  /** The user's active devices, newest first. */
  async listActiveByUser(userId: string): Promise<DeviceDoc[]> {
    const devices: DeviceDoc[] = await this.activeOf([userId]);
    return devices.sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime() || (a._id < b._id ? -1 : 1));
  }

  /** Swaps the refresh token atomically: only the holder of the current one can do it, once. */
  rotateRefreshToken(id: string, presentedHash: string, nextHash: string, nextExpiresAt: Date, now: Date): Promise<DeviceDoc | null> {
    return this.collection.findOneAndUpdate(
      { _id: id, revokedAt: null, refreshTokenHash: presentedHash, refreshExpiresAt: { $gt: now } },
      {
        $set: { refreshTokenHash: nextHash, refreshExpiresAt: nextExpiresAt, lastSeenAt: now },
        $push: { spentRefreshHashes: { $each: [presentedHash], $slice: -SPENT_HASHES_KEPT } },
      },
      { returnDocument: 'after' },
    );
  }

  /** Revokes the device; true when this call revoked it. */
  async revoke(id: string, userId: string, now: Date): Promise<boolean> {
    const result = await this.collection.updateOne({ _id: id, userId, revokedAt: null }, { $set: { revokedAt: now } });
    await this.userDevices.updateOne({ _id: userId }, { $pull: { deviceIds: id } });
    await Promise.all([this.activeDevices.clear(id), this.activeIds.clear(userId)]);
    return result.modifiedCount === 1;
  }

  async setPushToken(id: string, token: PushTokenRecord | null): Promise<void> {
    await this.collection.updateOne({ _id: id }, { $set: { pushToken: token } });
  }

  async setVoipPushToken(id: string, token: DeviceDoc['voipPushToken']): Promise<void> {
    await this.collection.updateOne({ _id: id }, { $set: { voipPushToken: token } });
  }

  /**
   * Swaps the biometric key only if the one enrolled is still `expected` (by public key), so two
   * concurrent changes cannot both win. Null `next` removes it.
   */
  async swapBiometricKey(id: string, expected: string | null, next: BiometricKeyRecord | null): Promise<boolean> {
    const current = await this.collection.findOne({ _id: id });
    if (!current || (current.biometricKey?.publicKey ?? null) !== expected) return false;
    const condition = expected === null ? { $in: [null] } : expected;
    // Cast: the driver's filter type cannot express `null or a value` on a nested path.
    const result = await this.collection.updateOne({ _id: id, 'biometricKey.publicKey': condition as never }, { $set: { biometricKey: next } });
    await this.activeDevices.clear(id);
    return result.modifiedCount === 1 || (expected === null && next === null);
  }

  async touch(id: string, now: Date): Promise<void> {
    await this.collection.updateOne({ _id: id }, { $set: { lastSeenAt: now } });
  }

  /** Every device a user ever had, revoked or not. */
  async allIdsOf(userId: string): Promise<string[]> {
    return (await this.collection.find({ userId }, { projection: { _id: 1 } }).toArray()).map((device) => device._id);
  }

  /** A deleted account's devices: their names (which often hold a person's name) blanked; the records stay as revoked devices. */
  async eraseNamesOf(userId: string): Promise<void> {
    await this.collection.updateMany({ userId }, { $set: { name: '' } });
  }

  /** A deleted account's list of devices, once nothing needs it (the last erasure step). */
  async forgetListOf(userId: string): Promise<void> {
    await this.userDevices.deleteOne({ _id: userId });
  }

  /** The push and VoIP tokens of every device of a user dropped (their account was deleted). */
  async dropPushTokensOf(userId: string): Promise<void> {
    await this.collection.updateMany({ userId }, { $set: { pushToken: null, voipPushToken: null } });
  }

  /** Every device of a user, revoked ones included, oldest first. */
  allOf(userId: string): Promise<DeviceDoc[]> {
    return this.collection.find({ userId }).sort({ createdAt: 1 }).toArray();
  }
}
