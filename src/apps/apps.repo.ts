import type { Collection, Db, Filter, UpdateFilter } from 'mongodb';
import { isDuplicateKey } from '../platform/mongo.js';
import { sharedCache, type CacheBus, type SharedCache } from '../platform/cache/invalidation.js';
import { must } from '../platform/must.js';
import { bulkOf, GroupWriter } from '../platform/group-writer.js';

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
  /** Set when its owner deleted their account: the app is gone for everyone (unlisted, uninstalled, its keys revoked, nothing delivered). */
  removedAt?: Date | null;
  /** Set when a site administrator took the app out of the directory: its owner cannot list it again. */
  unlistedAt?: Date | null;
  /** Test mode: the payments it asks for are test payments (no money moves); absent: off. */
  testMode?: boolean;
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
  /** A test payments key (`bpk_test_…`): it sees and makes test money only. */
  test?: boolean;
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
  /** While an attempt is being made: until when its worker holds it (a worker that died lets it go). */
  claimedUntil?: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

/** Which activity rows to list: by outcome, by event (kind of call), by time (from inclusive, to exclusive). */
export interface ActivityFilter {
  outcome?: ActivityDoc['outcome'] | undefined;
  event?: string | undefined;
  from?: Date | undefined;
  to?: Date | undefined;
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
  /** About a test payment (its event, or the reply that opened it). */
  test?: boolean;
  /** What broke the contract (the first problem: where and what), or what was refused of a reply; absent when nothing did. */
  detail?: string | null;
  /** The body sent and the body of the reply (null when none came), cut at 2,048 characters; absent on rows from before they were kept. */
  request?: string;
  reply?: string | null;
  createdAt: Date;
}

/**
 * The app platform's collections (`apps`, `app_manifests`, `app_credentials`, `room_apps`,
 * `app_activity`, `app_deliveries`) behind named reads and conditional writes.
 */
export class AppsRepo {
  private readonly apps: Collection<AppDoc>;
  private readonly manifests: Collection<ManifestDoc>;
  private readonly credentials: Collection<CredentialDoc>;
  private readonly roomApps: Collection<RoomAppDoc>;
  private readonly activity: Collection<ActivityDoc>;
  private readonly deliveries: Collection<DeliveryDoc>;
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
    return this.recent.get(id, () => this.apps.findOne({ _id: id, removedAt: null }));
  }

  /** Changes an app (the only way apps are changed after creation), clearing it from every process's cache; the app after. */
  async updateApp(id: string, update: UpdateFilter<AppDoc>): Promise<AppDoc | null> {
    const after = await this.apps.findOneAndUpdate({ _id: id }, update, { returnDocument: 'after' });
    await this.recent.clear(id);
    return after;
  }

  // Apps.

  /** The app, removed or not (a deletion cut short is finished on a removed app). */
  findAppEvenRemoved(appId: string): Promise<AppDoc | null> {
    return this.apps.findOne({ _id: appId });
  }

  findApp(appId: string): Promise<AppDoc | null> {
    return this.apps.findOne({ _id: appId, removedAt: null });
  }

  async insertApp(app: AppDoc): Promise<void> {
    await this.apps.insertOne(app);
  }

  /** A member's own apps, newest first. */
  appsOf(ownerId: string): Promise<AppDoc[]> {
    return this.apps.find({ ownerId, removedAt: null }).sort({ createdAt: -1 }).toArray();
  }

  appsByIds(appIds: string[]): Promise<AppDoc[]> {
    return this.apps.find({ _id: { $in: appIds }, removedAt: null }).toArray();
  }

  /** One page of the public apps with a manifest whose names have every word of `words`, by name, and how many there are. */
  async pageOfDirectory(words: string[], pageSize: number, currentPage: number): Promise<{ items: AppDoc[]; total: number }> {
    const filter = { public: true, removedAt: null, manifestVersion: { $ne: null }, ...(words.length > 0 ? { nameWords: { $all: words } } : {}) };
    const [items, total] = await Promise.all([this.apps.find(filter).sort({ name: 1, _id: 1 }).skip(currentPage * pageSize).limit(pageSize).toArray(), this.apps.countDocuments(filter)]);
    return { items, total };
  }

  /** Apps called since `since` (the health checks' round). */
  appsUsedSince(since: Date): Promise<AppDoc[]> {
    return this.apps.find({ lastUsedAt: { $gte: since } }).toArray();
  }

  countDownUsedSince(since: Date): Promise<number> {
    return this.apps.countDocuments({ lastUsedAt: { $gte: since }, health: 'DOWN' });
  }

  // Manifests: one document per app and version, never changed.

  /** Throws the driver's duplicate-key error when the version was uploaded before. */
  async insertManifest(manifest: ManifestDoc): Promise<void> {
    await this.manifests.insertOne(manifest);
  }

  findManifest(appId: string, version: string): Promise<ManifestDoc | null> {
    return this.manifests.findOne({ _id: `${appId}:${version}` });
  }

  /** Every version uploaded, newest first (the console's version history). */
  manifestsOf(appId: string): Promise<ManifestDoc[]> {
    return this.manifests.find({ appId }).sort({ createdAt: -1 }).toArray();
  }

  // Credentials (bot tokens and payments keys, kept as hashes).

  async insertCredential(credential: CredentialDoc): Promise<void> {
    await this.credentials.insertOne(credential);
  }

  findCredential(credentialId: string): Promise<CredentialDoc | null> {
    return this.credentials.findOne({ _id: credentialId });
  }

  /** An app's credentials not revoked, newest first. */
  liveCredentialsOf(appId: string): Promise<CredentialDoc[]> {
    return this.credentials.find({ appId, revokedAt: null }).sort({ createdAt: -1 }).toArray();
  }

  /** Revokes a live credential of the app; false when there was none such. */
  async revokeCredential(appId: string, credentialId: string, at: Date): Promise<boolean> {
    return (await this.credentials.updateOne({ _id: credentialId, appId, revokedAt: null }, { $set: { revokedAt: at } })).modifiedCount === 1;
  }

  /** Revokes the app's bot tokens for a room. */
  async revokeBotTokens(appId: string, roomId: string, at: Date): Promise<void> {
    await this.credentials.updateMany({ appId, roomId, kind: 'BOT_TOKEN', revokedAt: null }, { $set: { revokedAt: at } });
  }

  // Rooms' apps.

  async isInRoom(roomId: string, appId: string): Promise<boolean> {
    return (await this.roomApps.findOne({ _id: `${roomId}:${appId}` })) !== null;
  }

  /** The apps added to a room. */
  async appIdsOfRoom(roomId: string): Promise<string[]> {
    return (await this.roomApps.find({ roomId }, { projection: { appId: 1 } }).toArray()).map((row) => row.appId);
  }

  /** Adds the app to the room (once: adding it again changes nothing). */
  /** Whether it was added now (false: it was in the room already). */
  async addToRoom(roomApp: Omit<RoomAppDoc, '_id'>): Promise<boolean> {
    try {
      await this.roomApps.insertOne({ _id: `${roomApp.roomId}:${roomApp.appId}`, ...roomApp });
      return true;
    } catch (error) {
      if (!isDuplicateKey(error)) throw error;
      return false;
    }
  }

  /** Whether it was removed now (false: it was not in the room). */
  async removeFromRoom(roomId: string, appId: string): Promise<boolean> {
    return (await this.roomApps.deleteOne({ _id: `${roomId}:${appId}` })).deletedCount > 0;
  }

  // Activity: one row per call to an app.

  /** Records a call; calls recorded while others are being written go together in one insert (GroupWriter). */
  insertActivity(activity: ActivityDoc): Promise<void> {
    return this.activityRows.add(activity);
  }

  private readonly activityRows = new GroupWriter(bulkOf<ActivityDoc>((rows) => this.activity.insertMany(rows, { ordered: false })));

  findActivity(appId: string, activityId: string): Promise<ActivityDoc | null> {
    return this.activity.findOne({ _id: activityId, appId });
  }

  async setAppErrorCode(activityId: string, code: string): Promise<void> {
    await this.activity.updateOne({ _id: activityId }, { $set: { appErrorCode: code } });
  }

  /** A reply that kept the contract but that the service refused (a payment it cannot open): failed, and why. */
  /** The row is about a test payment. */
  async markTest(activityId: string): Promise<void> {
    await this.activity.updateOne({ _id: activityId }, { $set: { test: true } });
  }

  async setRefused(activityId: string, failure: 'PAYMENT_REFUSED', detail: string): Promise<void> {
    await this.activity.updateOne({ _id: activityId }, { $set: { outcome: 'FAILED', failure, detail } });
  }

  /** An app's activity, newest first, read as a stream. */
  activityStream(appId: string): AsyncIterable<ActivityDoc> {
    return this.activity.find({ appId }).sort({ createdAt: -1, _id: -1 });
  }

  /** One page of an app's activity (the rows that pass `filter`), newest first, and how many rows there are. */
  async pageOfActivity(appId: string, pageSize: number, currentPage: number, filter: ActivityFilter = {}): Promise<{ items: ActivityDoc[]; total: number }> {
    const query: Filter<ActivityDoc> = { appId };
    if (filter.outcome) query.outcome = filter.outcome;
    if (filter.event) query.event = filter.event;
    if (filter.from || filter.to) query.createdAt = { ...(filter.from ? { $gte: filter.from } : {}), ...(filter.to ? { $lt: filter.to } : {}) };
    const [items, total] = await Promise.all([
      this.activity.find(query).sort({ createdAt: -1, _id: -1 }).skip(currentPage * pageSize).limit(pageSize).toArray(),
      this.activity.countDocuments(query),
    ]);
    return { items, total };
  }

  /** Removes finished deliveries (delivered, failed or given up) last touched before `before`; how many. */
  async deleteFinishedDeliveriesBefore(before: Date): Promise<number> {
    return (await this.deliveries.deleteMany({ status: { $ne: 'PENDING' }, updatedAt: { $lt: before } })).deletedCount;
  }

  /** Removes activity rows made before `before`; how many. */
  async deleteActivityBefore(before: Date): Promise<number> {
    return (await this.activity.deleteMany({ createdAt: { $lt: before } })).deletedCount;
  }

  // Deliveries of payment events: each attempt claimed by its (attempt, round), so a stale job does nothing.

  /**
   * Records a delivery once: recording it again (same id) changes nothing; the delivery as stored, and
   * whether this call recorded it. Deliveries recorded while others are being written go together in
   * one insert (GroupWriter).
   */
  async insertDelivery(delivery: DeliveryDoc): Promise<{ delivery: DeliveryDoc; recorded: boolean }> {
    try {
      await this.deliveryInserts.add(delivery);
      return { delivery, recorded: true };
    } catch (error) {
      if (!isDuplicateKey(error)) throw error;
      return { delivery: must(await this.deliveries.findOne({ _id: delivery._id }), 'the delivery recorded before'), recorded: false };
    }
  }

  private readonly deliveryInserts = new GroupWriter(bulkOf<DeliveryDoc>((deliveries) => this.deliveries.insertMany(deliveries, { ordered: false })));

  /**
   * Pending deliveries whose job should have run before `before` and that no live worker holds: their
   * job was lost (a worker died mid-attempt, or before the job was queued).
   */
  overdueDeliveries(before: Date, now: Date, limit: number): Promise<DeliveryDoc[]> {
    return this.deliveries
      .find({ status: 'PENDING', nextAttemptAt: { $lt: before }, $or: [{ claimedUntil: null }, { claimedUntil: { $exists: false } }, { claimedUntil: { $lt: now } }] })
      .limit(limit)
      .toArray();
  }

  /**
   * Arms an overdue delivery again under a new round (its lost job, if it ever runs, is stale); an
   * attempt a dead worker held is given back. Null when it moved on meanwhile.
   */
  rearmDelivery(doc: Pick<DeliveryDoc, '_id' | 'attempts' | 'round' | 'claimedUntil'>, now: Date): Promise<DeliveryDoc | null> {
    const held = doc.claimedUntil !== null && doc.claimedUntil !== undefined;
    return this.deliveries.findOneAndUpdate(
      { _id: doc._id, status: 'PENDING', attempts: doc.attempts, round: doc.round },
      { $inc: { round: 1, attempts: held ? -1 : 0 }, $set: { claimedUntil: null, nextAttemptAt: now, updatedAt: now } },
      { returnDocument: 'after' },
    );
  }

  /** Claims the attempt a job stands for (the delivery pending at that attempt and round); null when the job is stale. */
  claimAttempt(deliveryId: string, attempt: number, round: number, at: Date, leaseMs: number): Promise<DeliveryDoc | null> {
    return this.deliveries.findOneAndUpdate(
      { _id: deliveryId, status: 'PENDING', attempts: attempt, round },
      { $inc: { attempts: 1 }, $set: { updatedAt: at, claimedUntil: new Date(at.getTime() + leaseMs) } },
      { returnDocument: 'after' },
    );
  }

  /**
   * Holds again an attempt the delivery was recorded with (`attempts` and `round` as recorded), for a
   * job that ran late; null when the sweep armed the delivery again meanwhile, or it ended.
   */
  renewClaim(deliveryId: string, attempts: number, round: number, at: Date, leaseMs: number): Promise<DeliveryDoc | null> {
    return this.deliveries.findOneAndUpdate(
      { _id: deliveryId, status: 'PENDING', attempts, round },
      { $set: { updatedAt: at, claimedUntil: new Date(at.getTime() + leaseMs) } },
      { returnDocument: 'after' },
    );
  }

  /** Gives a claimed attempt back under a new round (held or waiting); null when another job moved on meanwhile. */
  giveBackAttempt(claimed: Pick<DeliveryDoc, '_id' | 'attempts' | 'round'>): Promise<DeliveryDoc | null> {
    return this.deliveries.findOneAndUpdate({ _id: claimed._id, attempts: claimed.attempts, round: claimed.round }, { $inc: { attempts: -1, round: 1 }, $set: { claimedUntil: null } }, { returnDocument: 'after' });
  }

  async setNextAttempt(deliveryId: string, at: Date): Promise<void> {
    await this.deliveries.updateOne({ _id: deliveryId }, { $set: { nextAttemptAt: at, claimedUntil: null } });
  }

  /** Ends a delivery; deliveries ended while others are being written go together in one write (GroupWriter). */
  finishDelivery(deliveryId: string, status: DeliveryDoc['status'], at: Date): Promise<void> {
    return this.finishes.add({ deliveryId, status, at });
  }

  private readonly finishes = new GroupWriter(
    bulkOf<{ deliveryId: string; status: DeliveryDoc['status']; at: Date }>((ends) =>
      this.deliveries.bulkWrite(ends.map(({ deliveryId, status, at }) => ({ updateOne: { filter: { _id: deliveryId }, update: { $set: { status, nextAttemptAt: null, claimedUntil: null, updatedAt: at } } } })), { ordered: false }),
    ),
  );

  /** Makes a finished delivery of the app pending again under a new round; null when it is still pending (or not the app's). */
  reopenDelivery(appId: string, deliveryId: string, at: Date): Promise<DeliveryDoc | null> {
    return this.deliveries.findOneAndUpdate({ _id: deliveryId, appId, status: { $ne: 'PENDING' } }, { $set: { status: 'PENDING', attempts: 0, nextAttemptAt: at, updatedAt: at }, $inc: { round: 1 } }, { returnDocument: 'after' });
  }

  /** How many deliveries are in a status (the benches count them). */
  countDeliveries(status?: DeliveryDoc['status']): Promise<number> {
    return this.deliveries.countDocuments(status ? { status } : {});
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

  /**
   * An app whose owner deleted their account, gone for everyone: unlisted, out of every room, every
   * bot token and payments key revoked, its deliveries stopped. Each step may repeat.
   */
  async removeApp(appId: string, at: Date): Promise<void> {
    await this.updateApp(appId, { $set: { removedAt: at, public: false, updatedAt: at } });
    await this.credentials.updateMany({ appId, revokedAt: null }, { $set: { revokedAt: at } });
    await this.roomApps.deleteMany({ appId });
    await this.deliveries.updateMany({ appId, status: 'PENDING' }, { $set: { status: 'GAVE_UP', nextAttemptAt: null, updatedAt: at } });
  }

  /** A member's apps, removed ones included (what an account deletion takes down). */
  allAppsOf(ownerId: string): Promise<AppDoc[]> {
    return this.apps.find({ ownerId }).toArray();
  }

  /** Out of the directory, by a site administrator; false when there is no such app. */
  async unlist(appId: string, at: Date): Promise<boolean> {
    return (await this.updateApp(appId, { $set: { public: false, unlistedAt: at, updatedAt: at } })) !== null;
  }
}
