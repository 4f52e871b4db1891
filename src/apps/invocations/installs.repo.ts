import type { Collection, Db } from 'mongodb';
import { isDuplicateKey } from '../../platform/mongo.js';
import { must } from '../../platform/must.js';

/** A member's install of an app (`_id` `<appId>:<userId>`): the manifest version they use until they update. */
export interface InstallDoc {
  _id: string;
  appId: string;
  userId: string;
  manifestVersion: string;
  installedAt: Date;
  updatedAt: Date;
}

/**
 * The id an app knows a member by (`_id`, random, so nothing links it to the member's real id or to
 * another app's id). `activeKey` (`<appId>:<userId>:member|tester`) holds while the id is in use and
 * is unset when the member removes the app asking to be forgotten.
 */
export interface AppIdentityDoc {
  _id: string;
  appId: string;
  userId: string;
  tester: boolean;
  activeKey?: string;
  createdAt: Date;
  forgottenAt: Date | null;
}

/** Members' installs (`app_installs`) and the ids apps know members by (`app_identities`). */
export class InstallsRepo {
  private readonly installs: Collection<InstallDoc>;
  private readonly identities: Collection<AppIdentityDoc>;

  constructor(db: Db) {
    this.installs = db.collection<InstallDoc>('app_installs');
    this.identities = db.collection<AppIdentityDoc>('app_identities');
  }

  async ensureIndexes(): Promise<void> {
    await Promise.all([
      this.installs.createIndexes([{ key: { userId: 1, installedAt: -1 }, name: 'of_user' }]),
      this.identities.createIndexes([{ key: { activeKey: 1 }, name: 'active_once', unique: true, sparse: true }]),
    ]);
  }

  /** Installs the app for the member, or moves their install to `manifestVersion`. */
  async upsertInstall(appId: string, userId: string, manifestVersion: string, at: Date): Promise<void> {
    await this.installs.updateOne({ _id: `${appId}:${userId}` }, { $set: { appId, userId, manifestVersion, updatedAt: at }, $setOnInsert: { installedAt: at } }, { upsert: true });
  }

  /** An app deleted: every member's install of it goes, and the ids it knew them by are forgotten. */
  async removeAllOf(appId: string, at: Date): Promise<void> {
    await this.installs.deleteMany({ appId });
    await this.identities.updateMany({ appId, activeKey: { $exists: true } }, { $unset: { activeKey: '' }, $set: { forgottenAt: at } });
  }

  async removeInstall(appId: string, userId: string): Promise<void> {
    await this.installs.deleteOne({ _id: `${appId}:${userId}` });
  }

  findInstall(appId: string, userId: string): Promise<InstallDoc | null> {
    return this.installs.findOne({ _id: `${appId}:${userId}` });
  }

  /** How many members have the app installed. */
  countInstalls(appId: string): Promise<number> {
    return this.installs.countDocuments({ appId });
  }

  /** A member's installs, newest first. */
  installsOf(userId: string): Promise<InstallDoc[]> {
    return this.installs.find({ userId }).sort({ installedAt: -1 }).toArray();
  }

  /** The id in use under `activeKey`, or a new one made from `fresh` (a race for it is decided by the unique key). */
  async identityFor(activeKey: string, fresh: AppIdentityDoc): Promise<string> {
    const existing = await this.identities.findOne({ activeKey });
    if (existing) return existing._id;
    try {
      await this.identities.insertOne(fresh);
      return fresh._id;
    } catch (error) {
      if (!isDuplicateKey(error)) throw error;
      return must(await this.identities.findOne({ activeKey }), 'the id that won the race')._id;
    }
  }

  /** The member's ids for the app stop being in use: a later install gets a new one. */
  async forget(appId: string, userId: string, at: Date): Promise<void> {
    await this.identities.updateMany({ appId, userId, activeKey: { $exists: true } }, { $unset: { activeKey: '' }, $set: { forgottenAt: at } });
  }

  /** The member an app's id stands for, while it is a member's (not a tester's) id in use. */
  activeMemberIdentity(appId: string, appUserId: string): Promise<AppIdentityDoc | null> {
    return this.identities.findOne({ _id: appUserId, appId, tester: false, activeKey: { $exists: true } });
  }
}
