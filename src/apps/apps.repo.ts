import type { Collection, Db, UpdateFilter } from 'mongodb';
import { sharedCache, type CacheBus, type SharedCache } from '../platform/cache/invalidation.js';

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
  /** Lower-cased words of the name, for the directory's search. */
  nameWords: string[];
  /** Listed in the directory: any member may install it (else only its owner). */
  public: boolean;
  webhookUrl: string;
  /** Newest first. */
  secrets: StoredSecret[];
  manifestVersion: string | null;
  manifestHash: string | null;
  /** How long a reply may take (5 s; a site administrator may grant up to 120 s). */
  timeoutMs: number;
  health: 'UNKNOWN' | 'UP' | 'DOWN';
  /** Health checks failed in a row (two mark the app DOWN until a pong). */
  pingFailures: number;
  /** The last call that was not a health check: apps used in the last 24 hours are pinged. */
  lastUsedAt: Date | null;
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

/**
 * A call sent through the delivery queue (`_id` its delivery id, which every attempt and a replay
 * reuse). Payment events are retried on the schedule until one attempt is answered 2xx.
 */
export interface DeliveryDoc {
  _id: string;
  appId: string;
  event: string;
  /** The body, JSON text, as the first attempt sent it. */
  payload: string;
  retry: boolean;
  /** Attempts made so far. */
  attempts: number;
  /** Bumped by each postponement (the app's breaker open) and each replay, so the next job's id is new. */
  round: number;
  status: 'PENDING' | 'DELIVERED' | 'FAILED' | 'GAVE_UP';
  nextAttemptAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
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
  /** An `error` reply's code: for the app's own logs, never shown to members. */
  appErrorCode?: string;
  createdAt: Date;
}

export class AppsRepo {
  readonly apps: Collection<AppDoc>;
  readonly manifests: Collection<ManifestDoc>;
  readonly credentials: Collection<CredentialDoc>;
  readonly roomApps: Collection<RoomAppDoc>;
  readonly activity: Collection<ActivityDoc>;
  readonly deliveries: Collection<DeliveryDoc>;
  private readonly recent: SharedCache<AppDoc | null>;

  constructor(db: Db, bus?: CacheBus) {
    this.recent = sharedCache<AppDoc | null>(bus, 'app', 5_000);
    this.apps = db.collection<AppDoc>('apps');
    this.manifests = db.collection<ManifestDoc>('app_manifests');
    this.credentials = db.collection<CredentialDoc>('app_credentials');
    this.roomApps = db.collection<RoomAppDoc>('room_apps');
    this.activity = db.collection<ActivityDoc>('app_activity');
    this.deliveries = db.collection<DeliveryDoc>('app_deliveries');
  }

  /** The app from a 5-second cache that every write through `updateApp` clears in every process (the delivery path reads it per call). */
  appCached(id: string): Promise<AppDoc | null> {
    return this.recent.get(id, () => this.apps.findOne({ _id: id }));
  }

  /** Changes an app (the only way apps are changed after creation), clearing it from every process's cache; the app after. */
  async updateApp(id: string, update: UpdateFilter<AppDoc>): Promise<AppDoc | null> {
    const after = await this.apps.findOneAndUpdate({ _id: id }, update, { returnDocument: 'after' });
    await this.recent.clear(id);
    return after;
  }

  async ensureIndexes(): Promise<void> {
    await Promise.all([
      this.apps.createIndexes([
        { key: { ownerId: 1, createdAt: -1 }, name: 'of_owner' },
        { key: { lastUsedAt: 1 }, name: 'recently_used' },
        { key: { nameWords: 1 }, name: 'name_words' },
      ]),
      this.credentials.createIndexes([{ key: { appId: 1, createdAt: -1 }, name: 'of_app' }]),
      this.activity.createIndexes([
        { key: { appId: 1, createdAt: -1 }, name: 'of_app' },
        { key: { createdAt: 1 }, name: 'by_age' },
      ]),
      this.deliveries.createIndexes([{ key: { createdAt: 1 }, name: 'by_age' }]),
    ]);
  }
}
