import type { Principal } from '../platform/principal.js';
import type { RoomsPolicy } from '../rooms/index.js';
import type { AppDoc, AppsRepo } from './apps.repo.js';
import type { InstallDoc, InstallsRepo } from './invocations/installs.repo.js';

/**
 * Who may see an app, in one place: find it, read its manifest, install it, report it. A listed app,
 * everyone; an unlisted one, its owner, the members who installed it, and the readers of a room it
 * was added to (when they come from that room). Adding an app to a room is narrower: a listed app,
 * or one's own. Anyone else is answered as for no such app, so an unlisted app's existence is not told.
 */
export class AppsPolicy {
  constructor(private readonly deps: { repo: Pick<AppsRepo, 'findApp' | 'isInRoom'>; installs: Pick<InstallsRepo, 'findInstall'>; rooms: Pick<RoomsPolicy, 'mayRead'> }) {}

  /** `from.roomId`: the room the member comes from; `from.install`: their install, when read already (null: none). */
  async maySee(app: AppDoc | null, principal: Principal, from: { roomId?: string | undefined; install?: InstallDoc | null } = {}): Promise<boolean> {
    if (!app) return false;
    if (app.public || app.ownerId === principal.userId) return true;
    const install = from.install !== undefined ? from.install : await this.deps.installs.findInstall(app._id, principal.userId);
    if (install) return true;
    if (from.roomId === undefined || !(await this.deps.repo.isInRoom(from.roomId, app._id))) return false;
    return this.deps.rooms.mayRead(principal, from.roomId).then(
      () => true,
      () => false,
    );
  }

  /** The app by id, when the member may see it (see `maySee`). */
  async visible(appId: string, principal: Principal, from: { roomId?: string | undefined } = {}): Promise<AppDoc | null> {
    const app = await this.deps.repo.findApp(appId);
    return (await this.maySee(app, principal, from)) ? app : null;
  }

  /** Whether a room's admin may add the app to a room: a listed app, or their own. */
  mayAddToRoom(app: AppDoc | null, principal: Principal): app is AppDoc {
    return app !== null && (app.public || app.ownerId === principal.userId);
  }
}
