import { randomBytes } from 'node:crypto';
import type { z } from 'zod';
import type { Clock } from '../../platform/clock.js';
import { page, type Page } from '../../platform/paging.js';
import type { Principal } from '../../platform/principal.js';
import { wordsOf } from '../../platform/words.js';
import { AppsErrors } from '../apps.errors.js';
import type { AppDoc, AppsRepo } from '../apps.repo.js';
import type { InstallsRepo } from './installs.repo.js';
import type { AppForMemberSchema, DirectoryEntrySchema, InstallDtoSchema } from '../apps.schemas.js';
import type { RoomsPolicy } from '../../rooms/index.js';
import type { AppsPolicy } from '../apps.policy.js';
import { parseManifest } from '../shared/manifest.js';
import { must } from '../../platform/must.js';

type InstallView = z.infer<typeof InstallDtoSchema>;
type DirectoryEntry = z.infer<typeof DirectoryEntrySchema>;
type AppForMemberView = z.infer<typeof AppForMemberSchema>;

/**
 * The members' side of apps: the directory of public apps with their health, installs (each keeping
 * the manifest version it was made with until the member installs again), and per-app user ids:
 * stable while the member has the app, also across removing and installing again; new only after
 * removing with "forget". The owner testing an app they have not installed is a tester, with an id of
 * its own.
 */
export class InstallsService {
  constructor(
    readonly installs: InstallsRepo,
    private readonly deps: { repo: AppsRepo; policy: AppsPolicy; rooms: Pick<RoomsPolicy, 'mayRead'>; clock: Clock },
  ) {}

  async directory(query: string | undefined, pageSize: number, currentPage: number): Promise<Page<DirectoryEntry>> {
    const words = wordsOf(query ?? null);
    const { items, total } = await this.deps.repo.pageOfDirectory(words, pageSize, currentPage);
    return page(items.map((app) => ({ id: app._id, name: app.name, manifestVersion: must(app.manifestVersion, 'a listed app\'s manifest'), health: app.health })), total, pageSize, currentPage);
  }

  /**
   * Installs the app, or moves the member's install to its current manifest version: an app the
   * member may see (AppsPolicy): listed, their own, installed before, or added to a room
   * (`fromRoomId`) they read (installing is the consent a room's app that asks for personal scopes needs).
   */
  async install(principal: Principal, appId: string, fromRoomId?: string): Promise<InstallView> {
    const app = await this.deps.policy.visible(appId, principal, { roomId: fromRoomId });
    if (!app) {
      throw AppsErrors.APP_NOT_FOUND({ message: fromRoomId ? 'No such app in that room of yours' : 'No such app in the directory: an app added to one of your rooms is installed with that room\'s id (?roomId=)' });
    }
    if (!app.manifestVersion) throw AppsErrors.APP_HAS_NO_MANIFEST();
    const now = this.deps.clock();
    await this.installs.upsertInstall(appId, principal.userId, app.manifestVersion, now);
    const identity = await this.identity(appId, principal.userId, false);
    return { appId, name: app.name, appUserId: identity, manifestVersion: app.manifestVersion, currentVersion: app.manifestVersion, installedAt: now.toISOString() };
  }

  /** Removes the member's install; with `forget`, the per-app id goes too and a later install gets a new one. */
  async uninstall(principal: Principal, appId: string, forget: boolean): Promise<void> {
    await this.installs.removeInstall(appId, principal.userId);
    if (forget) await this.installs.forget(appId, principal.userId, this.deps.clock());
  }

  async installed(principal: Principal): Promise<InstallView[]> {
    const installs = await this.installs.installsOf(principal.userId);
    const apps = new Map((await this.deps.repo.appsByIds(installs.map((i) => i.appId))).map((app) => [app._id, app]));
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
    const app = await this.deps.repo.findApp(appId);
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
   * on the current version; a member calling from a room the app was added to, by their per-app id
   * (made on first use) on the current version (`viaRoom`: the consent its personal scopes need is
   * still to be given, by installing); anyone else null.
   */
  async caller(app: AppDoc, userId: string, roomId?: string): Promise<{ appUserId: string; manifestVersion: string; tester: boolean; viaRoom: boolean } | null> {
    const install = await this.installs.findInstall(app._id, userId);
    if (install) return { appUserId: await this.identity(app._id, userId, false), manifestVersion: install.manifestVersion, tester: false, viaRoom: false };
    if (app.ownerId === userId && app.manifestVersion) return { appUserId: await this.identity(app._id, userId, true), manifestVersion: app.manifestVersion, tester: true, viaRoom: false };
    if (roomId && app.manifestVersion && (await this.deps.repo.isInRoom(roomId, app._id))) return { appUserId: await this.identity(app._id, userId, false), manifestVersion: app.manifestVersion, tester: false, viaRoom: true };
    return null;
  }

  /**
   * What a phone needs to show an app (issue 24, item 5): its name, health, and the manifest version
   * the member uses (commands, flows, views, inputs with their rules, scopes). For an app the member
   * installed, owns, finds in the directory, or (with `roomId`) that was added to a room they read.
   */
  async forMember(principal: Principal, appId: string, roomId: string | undefined): Promise<AppForMemberView> {
    const app = await this.deps.repo.findApp(appId);
    const install = app ? await this.installs.findInstall(appId, principal.userId) : null;
    if (!app || !app.manifestVersion || !(await this.deps.policy.maySee(app, principal, { roomId, install }))) throw AppsErrors.APP_NOT_FOUND({ message: 'No such app' });
    const version = install?.manifestVersion ?? app.manifestVersion;
    const manifestDoc = await this.deps.repo.findManifest(appId, version);
    if (!manifestDoc) throw AppsErrors.APP_HAS_NO_MANIFEST();
    return { id: app._id, name: app.name, health: app.health, installed: install !== null, manifestVersion: version, currentVersion: app.manifestVersion, manifest: parseManifest(JSON.parse(manifestDoc.manifest)) };
  }

  /** The apps added to a room, for its readers: what the phone offers there. */
  async ofRoom(principal: Principal, roomId: string): Promise<DirectoryEntry[]> {
    await this.deps.rooms.mayRead(principal, roomId);
    const apps = await this.deps.repo.appsByIds(await this.deps.repo.appIdsOfRoom(roomId));
    return apps.flatMap((app) => (app.manifestVersion ? [{ id: app._id, name: app.name, manifestVersion: app.manifestVersion, health: app.health }] : []));
  }

  /** The member's id for the app: the one in use, or a new random one (a race for it is decided by the unique key). */
  private async identity(appId: string, userId: string, tester: boolean): Promise<string> {
    const activeKey = `${appId}:${userId}:${tester ? 'tester' : 'member'}`;
    return this.installs.identityFor(activeKey, { _id: `u_${randomBytes(16).toString('base64url')}`, appId, userId, tester, activeKey, createdAt: this.deps.clock(), forgottenAt: null });
  }
}
