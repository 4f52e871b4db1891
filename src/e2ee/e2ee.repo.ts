import type { Collection, Db } from 'mongodb';
import { findByIds } from '../platform/mongo.js';
import type { KDF_NAMES } from './e2ee.schemas.js';

/** A device's identity keys (`_id` the device id): registered once; `revoked` once the device is signed out for good. */
export interface IdentityDoc {
  _id: string;
  userId: string;
  encryptionKey: string;
  signingKey: string;
  proof: string;
  revoked: boolean;
  createdAt: Date;
}

/** A user's key backup (`_id` the user id); the ciphertext lives in blob storage under `blobKey`. */
export interface BackupDoc {
  _id: string;
  version: number;
  kdf: (typeof KDF_NAMES)[number];
  /** The parameters as the JSON text uploaded, so they come back as they went in. */
  kdfParams: string;
  blobKey: string;
  size: number;
  etag: string;
  updatedAt: Date;
}

/** One wrapped copy of a room key, for one device. */
export interface StoredShare {
  wrappedKey: string;
  signature: string;
  fromDeviceId: string;
  fromSigningKey: string;
  createdAt: Date;
}

/**
 * One version of a room's key (`_id` `<roomId>:<version>`): its first upload inserts it with every
 * share at once, so the race for a version is decided by that single insert. Later shares for
 * devices that lacked one are set one by one, each only where none is (`shares.<deviceId>`).
 */
export interface KeyVersionDoc {
  _id: string;
  roomId: string;
  version: number;
  createdByDeviceId: string;
  createdAt: Date;
  shares: Record<string, StoredShare>;
}

/** What the key directory keeps per room: since when a rotation is due (null: not due). */
export interface E2eeRoomDoc {
  _id: string;
  rotationDueAt: Date | null;
  rotationReason: 'MEMBER_LEFT' | 'DEVICE_REVOKED' | 'DEVICE_ADDED' | null;
}

/** A device's request for a key version, and where it was delivered (device inbox sequence numbers). */
export interface KeyRequestDoc {
  _id: string;
  roomId: string;
  version: number;
  deviceId: string;
  userId: string;
  /** `<roomId>:<version>:<deviceId>` while open (unset once answered): one open request per device and version. */
  openKey?: string;
  status: 'OPEN' | 'ANSWERED';
  deliveries: { deviceId: string; seq: number }[];
  createdAt: Date;
  answeredAt: Date | null;
}

export const keyVersionId = (roomId: string, version: number) => `${roomId}:${version}`;

/**
 * End-to-end encryption's collections (`e2ee_identities`, `e2ee_backups`, `e2ee_key_versions`,
 * `e2ee_rooms`, `e2ee_key_requests`) behind named reads and conditional writes.
 */
export class E2eeRepo {
  private readonly identities: Collection<IdentityDoc>;
  private readonly backups: Collection<BackupDoc>;
  private readonly versions: Collection<KeyVersionDoc>;
  private readonly rooms: Collection<E2eeRoomDoc>;
  private readonly requests: Collection<KeyRequestDoc>;

  constructor(db: Db) {
    this.identities = db.collection<IdentityDoc>('e2ee_identities');
    this.backups = db.collection<BackupDoc>('e2ee_backups');
    this.versions = db.collection<KeyVersionDoc>('e2ee_key_versions');
    this.rooms = db.collection<E2eeRoomDoc>('e2ee_rooms');
    this.requests = db.collection<KeyRequestDoc>('e2ee_key_requests');
  }

  async ensureIndexes(): Promise<void> {
    await Promise.all([
      this.identities.createIndexes([{ key: { userId: 1 }, name: 'of_user' }]),
      this.versions.createIndexes([{ key: { roomId: 1, version: -1 }, name: 'of_room' }]),
      this.requests.createIndexes([{ key: { openKey: 1 }, name: 'open_once', unique: true, sparse: true }]),
    ]);
  }

  /** Devices that may receive room keys among those of `userIds`: with an identity, not signed out. */
  async eligibleIdentities(userIds: string[]): Promise<IdentityDoc[]> {
    const found: IdentityDoc[] = [];
    for (let start = 0; start < userIds.length; start += 100) {
      found.push(...(await this.identities.find({ userId: { $in: userIds.slice(start, start + 100) }, revoked: false }).toArray()));
    }
    return found;
  }

  identitiesByIds(deviceIds: string[]): Promise<IdentityDoc[]> {
    return findByIds(this.identities, deviceIds);
  }

  // Identities.

  /** Throws the driver's duplicate-key error when the device has one. */
  async insertIdentity(identity: IdentityDoc): Promise<void> {
    await this.identities.insertOne(identity);
  }

  findIdentity(deviceId: string): Promise<IdentityDoc | null> {
    return this.identities.findOne({ _id: deviceId });
  }

  /** Marks a device's identity signed out; false when it was already (or has none). */
  async revokeIdentity(deviceId: string): Promise<boolean> {
    const revoked = await this.identities.updateOne({ _id: deviceId, revoked: false }, { $set: { revoked: true } });
    return revoked.modifiedCount > 0;
  }

  // Key backups.

  findBackup(userId: string): Promise<BackupDoc | null> {
    return this.backups.findOne({ _id: userId });
  }

  /** The stored backup's version, or null. */
  async backupVersion(userId: string): Promise<number | null> {
    return (await this.backups.findOne({ _id: userId }, { projection: { version: 1 } }))?.version ?? null;
  }

  /**
   * Stores a backup record when its version exceeds the stored one; returns the replaced record (null
   * for the first). A duplicate-key error means a version at least as high came in between.
   */
  replaceBackupIfNewer(userId: string, record: Omit<BackupDoc, '_id'>): Promise<BackupDoc | null> {
    return this.backups.findOneAndUpdate({ _id: userId, version: { $lt: record.version } }, { $set: record }, { upsert: true, returnDocument: 'before' });
  }

  deleteBackup(userId: string): Promise<BackupDoc | null> {
    return this.backups.findOneAndDelete({ _id: userId });
  }

  // Room key versions.

  /** The room's key versions, oldest first, each with only this device's share. */
  versionsWithShareOf(roomId: string, deviceId: string): Promise<KeyVersionDoc[]> {
    return this.versions.find({ roomId }, { projection: { version: 1, createdAt: 1, [`shares.${deviceId}`]: 1 } }).sort({ version: 1 }).toArray();
  }

  /** Throws the driver's duplicate-key error when the version was taken. */
  async insertVersion(doc: KeyVersionDoc): Promise<void> {
    await this.versions.insertOne(doc);
  }

  /** Adds shares for devices none of which has one in that version yet (all or none); false when any had. */
  async addShares(versionId: string, shares: Record<string, unknown>): Promise<boolean> {
    const devices = Object.keys(shares);
    const set = Object.fromEntries(devices.map((deviceId) => [`shares.${deviceId}`, shares[deviceId]]));
    const written = await this.versions.updateOne({ _id: versionId, $and: devices.map((deviceId) => ({ [`shares.${deviceId}`]: { $exists: false } })) }, { $set: set });
    return written.modifiedCount === 1;
  }

  /** Which of the devices already have a share in that version. */
  async devicesWithShares(versionId: string, deviceIds: string[]): Promise<string[]> {
    const existing = await this.versions.findOne({ _id: versionId }, { projection: Object.fromEntries(deviceIds.map((deviceId) => [`shares.${deviceId}`, 1])) });
    return deviceIds.filter((deviceId) => existing?.shares?.[deviceId]);
  }

  // Rooms' rotation state.

  findRoom(roomId: string): Promise<E2eeRoomDoc | null> {
    return this.rooms.findOne({ _id: roomId });
  }

  async markRotationDue(roomId: string, reason: E2eeRoomDoc['rotationReason'], at: Date): Promise<void> {
    await this.rooms.updateOne({ _id: roomId }, { $set: { rotationDueAt: at, rotationReason: reason } }, { upsert: true });
  }

  // Key requests.

  /** Throws the driver's duplicate-key error while the same request is open. */
  async insertRequest(request: KeyRequestDoc): Promise<void> {
    await this.requests.insertOne(request);
  }

  /** Records where an open request was delivered; false when it was answered meanwhile. */
  async recordDeliveries(requestId: string, deliveries: KeyRequestDoc['deliveries']): Promise<boolean> {
    const recorded = await this.requests.updateOne({ _id: requestId, status: 'OPEN' }, { $set: { deliveries } });
    return recorded.modifiedCount > 0;
  }

  /** Marks the open request under `openKey` answered; null when there was none. */
  answerRequest(openKey: string, at: Date): Promise<KeyRequestDoc | null> {
    return this.requests.findOneAndUpdate({ openKey, status: 'OPEN' }, { $set: { status: 'ANSWERED', answeredAt: at }, $unset: { openKey: '' } }, { returnDocument: 'after' });
  }

  /** The room's newest key version (0 and null before the first). */
  async current(roomId: string): Promise<{ version: number; createdAt: Date | null }> {
    const newest = await this.versions.find({ roomId }, { projection: { version: 1, createdAt: 1 } }).sort({ version: -1 }).limit(1).next();
    return newest ? { version: newest.version, createdAt: newest.createdAt } : { version: 0, createdAt: null };
  }

  /** The identities of these devices revoked and their shares of every room key removed (their account was deleted). */
  async forgetDevices(deviceIds: string[]): Promise<void> {
    for (const deviceId of deviceIds) {
      await this.revokeIdentity(deviceId);
      await this.versions.updateMany({ [`shares.${deviceId}`]: { $exists: true } }, { $unset: { [`shares.${deviceId}`]: '' } });
    }
  }
}
