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

export class E2eeRepo {
  readonly identities: Collection<IdentityDoc>;
  readonly backups: Collection<BackupDoc>;
  readonly versions: Collection<KeyVersionDoc>;
  readonly rooms: Collection<E2eeRoomDoc>;
  readonly requests: Collection<KeyRequestDoc>;

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

  /** The room's newest key version (0 and null before the first). */
  async current(roomId: string): Promise<{ version: number; createdAt: Date | null }> {
    const newest = await this.versions.find({ roomId }, { projection: { version: 1, createdAt: 1 } }).sort({ version: -1 }).limit(1).next();
    return newest ? { version: newest.version, createdAt: newest.createdAt } : { version: 0, createdAt: null };
  }
}
