import { randomBytes } from 'node:crypto';
import type { Collection, Db } from 'mongodb';
import type { z } from 'zod';
import type { Clock } from '../platform/clock.js';
import { isDuplicateKey } from '../platform/mongo.js';
import { page, type Page } from '../platform/paging.js';
import type { Principal } from '../platform/principal.js';
import { wordsOf } from '../platform/words.js';
import { AppsErrors } from './apps.errors.js';
import type { AppDoc, AppsRepo } from './apps.repo.js';
import type { DirectoryEntrySchema, InstallDtoSchema } from './apps.schemas.js';

type InstallView = z.infer<typeof InstallDtoSchema>;
type DirectoryEntry = z.infer<typeof DirectoryEntrySchema>;

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

/**
 * The members' side of apps: the directory of public apps with their health, installs (each keeping
 * the manifest version it was made with until the member installs again), and per-app user ids:
 * stable while the member has the app, also across removing and installing again; new only after
 * removing with "forget". The owner testing an app they have not installed is a tester, with an id of
 * its own.
 */
export class InstallsService {
  readonly installs: Collection<InstallDoc>;
  readonly identities: Collection<AppIdentityDoc>;

  constructor(
    db: Db,
    private readonly deps: { repo: AppsRepo; clock: Clock },
  ) {
    this.installs = db.collection<InstallDoc>('app_installs');
    this.identities = db.collection<AppIdentityDoc>('app_identities');
  }

  async ensureIndexes(): Promise<void> {
    await Promise.all([
      this.installs.createIndexes([{ key: { userId: 1, installedAt: -1 }, name: 'of_user' }]),
      this.identities.createIndexes([{ key: { activeKey: 1 }, name: 'active_once', unique: true, sparse: true }]),
    ]);
  }

  async directory(query: string | undefined, pageSize: number, currentPage: number): Promise<Page<DirectoryEntry>> {
    const words = wordsOf(query ?? null);
    const filter = { public: true, manifestVersion: { $ne: null }, ...(words.length > 0 ? { nameWords: { $all: words } } : {}) };
    const [items, total] = await Promise.all([
      this.deps.repo.apps.find(filter).sort({ name: 1, _id: 1 }).skip(currentPage * pageSize).limit(pageSize).toArray(),
      this.deps.repo.apps.countDocuments(filter),
    ]);
    return page(items.map((app) => ({ id: app._id, name: app.name, manifestVersion: app.manifestVersion!, health: app.health })), total, pageSize, currentPage);
  }

  /** Installs the app, or moves the member's install to its current manifest version. */
  async install(principal: Principal, appId: string): Promise<InstallView> {
    const app = await this.deps.repo.apps.findOne({ _id: appId });
    if (!app || !(app.public || app.ownerId === principal.userId)) throw AppsErrors.APP_NOT_FOUND({ message: 'No such app' });
    if (!app.manifestVersion) throw AppsErrors.APP_HAS_NO_MANIFEST();
    const now = this.deps.clock();
    await this.installs.updateOne(
      { _id: `${appId}:${principal.userId}` },
      { $set: { appId, userId: principal.userId, manifestVersion: app.manifestVersion, updatedAt: now }, $setOnInsert: { installedAt: now } },
      { upsert: true },
    );
    const identity = await this.identity(appId, principal.userId, false);
    return { appId, name: app.name, appUserId: identity, manifestVersion: app.manifestVersion, currentVersion: app.manifestVersion, installedAt: now.toISOString() };
  }

  /** Removes the member's install; with `forget`, the per-app id goes too and a later install gets a new one. */
  async uninstall(principal: Principal, appId: string, forget: boolean): Promise<void> {
    await this.installs.deleteOne({ _id: `${appId}:${principal.userId}` });
    if (forget) {
      await this.identities.updateMany({ appId, userId: principal.userId, activeKey: { $exists: true } }, { $unset: { activeKey: '' }, $set: { forgottenAt: this.deps.clock() } });
    }
  }

  async installed(principal: Principal): Promise<InstallView[]> {
    const installs = await this.installs.find({ userId: principal.userId }).sort({ installedAt: -1 }).toArray();
    const apps = new Map((await this.deps.repo.apps.find({ _id: { $in: installs.map((i) => i.appId) } }).toArray()).map((app) => [app._id, app]));
    const views: InstallView[] = [];
    for (const install of installs) {
      const app = apps.get(install.appId);
      if (!app) continue;
      views.push({ appId: app._id, name: app.name, appUserId: await this.identity(app._id, principal.userId, false), manifestVersion: install.manifestVersion, currentVersion: app.manifestVersion ?? install.manifestVersion, installedAt: install.installedAt.toISOString() });
    }
    return views;
  }

  /**
   * A session token for the app (an app's web page opened from the phone checks who is there): a
   * compact JWS signed with the service's key (JWKS at /.well-known/jwks.json), naming the member by
   * the app's id for them, for 5 minutes.
   */
  async sessionToken(principal: Principal, appId: string, sign: (claims: Record<string, unknown>) => string): Promise<{ token: string; expiresAt: string }> {
    const app = await this.deps.repo.apps.findOne({ _id: appId });
    if (!app) throw AppsErrors.APP_NOT_FOUND({ message: 'No such app' });
    const caller = await this.caller(app, principal.userId);
    if (!caller) throw AppsErrors.APP_NOT_INSTALLED();
    const now = Math.floor(this.deps.clock().getTime() / 1000);
    const exp = now + 300;
    return { token: sign({ iss: 'chat-platform', aud: appId, sub: caller.appUserId, iat: now, exp }), expiresAt: new Date(exp * 1000).toISOString() };
  }

  /**
   * Who the member is to this app, and with which manifest version: an installing member by their
   * per-app id and installed version; the owner testing before installing as a tester (another id),
   * on the current version; anyone else null.
   */
  async caller(app: AppDoc, userId: string): Promise<{ appUserId: string; manifestVersion: string; tester: boolean } | null> {
    const install = await this.installs.findOne({ _id: `${app._id}:${userId}` });
    if (install) return { appUserId: await this.identity(app._id, userId, false), manifestVersion: install.manifestVersion, tester: false };
    if (app.ownerId === userId && app.manifestVersion) return { appUserId: await this.identity(app._id, userId, true), manifestVersion: app.manifestVersion, tester: true };
    return null;
  }

  /** The member's id for the app: the one in use, or a new random one (a race for it is decided by the unique key). */
  private async identity(appId: string, userId: string, tester: boolean): Promise<string> {
    const activeKey = `${appId}:${userId}:${tester ? 'tester' : 'member'}`;
    const existing = await this.identities.findOne({ activeKey });
    if (existing) return existing._id;
    const doc: AppIdentityDoc = { _id: `u_${randomBytes(16).toString('base64url')}`, appId, userId, tester, activeKey, createdAt: this.deps.clock(), forgottenAt: null };
    try {
      await this.identities.insertOne(doc);
      return doc._id;
    } catch (error) {
      if (!isDuplicateKey(error)) throw error;
      return (await this.identities.findOne({ activeKey }))!._id;
    }
  }
}
