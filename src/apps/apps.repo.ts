import type { Collection, Db } from 'mongodb';

/** One webhook secret, encrypted at rest; a rotated-out one keeps signing until `retiresAt`. */
export interface StoredSecret {
  sealed: string;
  createdAt: Date;
  retiresAt: Date | null;
}

export interface AppDoc {
  _id: string;
  ownerId: string;
  name: string;
  webhookUrl: string;
  /** Newest first. */
  secrets: StoredSecret[];
  manifestVersion: string | null;
  manifestHash: string | null;
  /** How long a reply may take (5 s; a site administrator may grant up to 120 s). */
  timeoutMs: number;
  health: 'UNKNOWN' | 'UP' | 'DOWN';
  createdAt: Date;
  updatedAt: Date;
}

/** Each uploaded manifest version, kept: members stay on the version they installed until they update. */
export interface ManifestDoc {
  _id: string;
  appId: string;
  version: string;
  hash: string;
  /** As uploaded, JSON text. */
  manifest: string;
  createdAt: Date;
}

/** A room bot token or payments key: only its hash is stored. `_id` is the id inside the token. */
export interface CredentialDoc {
  _id: string;
  appId: string;
  kind: 'BOT_TOKEN' | 'PAYMENT_KEY';
  roomId: string | null;
  prefix: string;
  hash: string;
  createdAt: Date;
  revokedAt: Date | null;
}

/** An app added to a room by the room's admins (`_id` `<roomId>:<appId>`). */
export interface RoomAppDoc {
  _id: string;
  roomId: string;
  appId: string;
  addedBy: string;
  createdAt: Date;
}

/** One call to an app's webhook, as the activity list shows it; kept 30 days. */
export interface ActivityDoc {
  _id: string;
  appId: string;
  deliveryId: string;
  event: string;
  outcome: 'OK' | 'APP_ERROR' | 'FAILED';
  status: number | null;
  ms: number;
  requestBytes: number;
  replyBytes: number;
  failure: string | null;
  createdAt: Date;
}

export class AppsRepo {
  readonly apps: Collection<AppDoc>;
  readonly manifests: Collection<ManifestDoc>;
  readonly credentials: Collection<CredentialDoc>;
  readonly roomApps: Collection<RoomAppDoc>;
  readonly activity: Collection<ActivityDoc>;

  constructor(db: Db) {
    this.apps = db.collection<AppDoc>('apps');
    this.manifests = db.collection<ManifestDoc>('app_manifests');
    this.credentials = db.collection<CredentialDoc>('app_credentials');
    this.roomApps = db.collection<RoomAppDoc>('room_apps');
    this.activity = db.collection<ActivityDoc>('app_activity');
  }

  async ensureIndexes(): Promise<void> {
    await Promise.all([
      this.apps.createIndexes([{ key: { ownerId: 1, createdAt: -1 }, name: 'of_owner' }]),
      this.credentials.createIndexes([{ key: { appId: 1, createdAt: -1 }, name: 'of_app' }]),
      this.activity.createIndexes([
        { key: { appId: 1, createdAt: -1 }, name: 'of_app' },
        { key: { createdAt: 1 }, name: 'by_age' },
      ]),
    ]);
  }
}
