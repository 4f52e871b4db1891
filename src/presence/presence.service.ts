import type { z } from 'zod';
import type { Principal } from '../platform/principal.js';
import type { PresenceStore } from './presence.store.js';
import type { ContactsService } from '../contacts/index.js';
import type { DevicesService } from '../devices/index.js';
import type { RoomsService } from '../rooms/index.js';
import type { UserReads } from '../users/index.js';
import type { UserPresenceSchema } from './presence.schemas.js';

/** As the UserPresence record of the OpenAPI document. */
export type UserPresenceView = z.infer<typeof UserPresenceSchema>;

export class PresenceService {
  constructor(
    private readonly presence: PresenceStore,
    private readonly devices: DevicesService,
    private readonly contacts: ContactsService,
    private readonly rooms: RoomsService,
    private readonly users: Pick<UserReads, 'findManyByIds'>,
  ) {}

  /**
   * Presence of the users the caller may see: themself, their connections, and people sharing a
   * room with them. Others are left out of the answer rather than refused, so the call does not tell
   * who exists.
   */
  async ofUsers(principal: Principal, userIds: string[]): Promise<UserPresenceView[]> {
    const wanted = [...new Set(userIds)];
    const others = wanted.filter((id) => id !== principal.userId);
    const [connected, sharing] = await Promise.all([
      this.contacts.connectedAmong(principal.userId, others),
      this.rooms.sharingARoom(principal.userId, others),
    ]);
    const candidates = wanted.filter((id) => id === principal.userId || connected.has(id) || sharing.has(id));
    // A deleted account answers nothing, as an unknown id (its connections and memberships may not be
    // erased yet: that runs in the background).
    const deleted = new Set((await this.users.findManyByIds(candidates.filter((id) => id !== principal.userId))).filter((user) => user.deletedAt).map((user) => user._id));
    const visible = candidates.filter((id) => !deleted.has(id));
    return Promise.all(
      visible.map(async (userId) => {
        const deviceIds = await this.devices.activeDeviceIds(userId);
        const devices = await this.presence.ofDevices(deviceIds);
        const seen = devices.map((d) => d.lastSeenAt).filter((at): at is string => at !== null).sort();
        return { userId, online: devices.some((d) => d.online), lastSeenAt: seen.at(-1) ?? null, devices };
      }),
    );
  }
}
