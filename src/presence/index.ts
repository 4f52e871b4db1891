import type { ContactsService } from '../contacts/index.js';
import type { DevicesService } from '../devices/index.js';
import type { Platform } from '../platform/platform.js';
import type { RoomsService } from '../rooms/index.js';
import type { UserReads } from '../users/index.js';
import { PresenceService } from './presence.service.js';
import { PresenceStore } from './presence.store.js';

/** The presence store in Redis (hub heartbeats, device-to-node sets, last seen): device events ask it who is online. */
export function presenceStore(p: Platform) {
  return { store: new PresenceStore(p.redis, p.keys.presence, p.config.PRESENCE_TTL * 1000) };
}

/** Presence as members see it: of themselves, their connections and people sharing a room. */
export function presenceArea(_p: Platform, deps: { store: PresenceStore; devices: DevicesService; contacts: ContactsService; rooms: RoomsService; users: UserReads }) {
  return { presence: new PresenceService(deps.store, deps.devices, deps.contacts, deps.rooms, deps.users) };
}

// What other areas use of this one (they import only this file).
export type { PresenceStore } from './presence.store.js';
