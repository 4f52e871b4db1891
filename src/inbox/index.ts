import type { DevicesService } from '../devices/index.js';
import { DeviceEvents } from '../platform/device-events.js';
import type { Platform } from '../platform/platform.js';
import type { PresenceStore } from '../presence/index.js';
import { DeviceInbox } from './inbox.js';

/** Each device's event inbox, and the emitter every area sends device events through. */
export function inboxArea(p: Platform, deps: { presence: PresenceStore; devices: DevicesService }) {
  const inbox = new DeviceInbox(p.redis, p.keys, { maxEvents: p.config.INBOX_MAX_EVENTS, maxAgeSeconds: p.config.INBOX_MAX_AGE });
  const events = new DeviceEvents({
    pubsub: p.pubsub,
    keys: p.keys,
    inbox,
    presence: deps.presence,
    activeDeviceIds: (userId) => deps.devices.activeDeviceIds(userId),
    queues: p.queues,
    encodedBroadcasts: p.config.ROOM_BROADCASTS_ENCODED,
  });
  // A revoked or signed-out device loses its sockets on every hub node, and its inbox.
  p.domainEvents.on('device.revoked', async ({ deviceId }) => {
    events.disconnectDevice(deviceId);
    await inbox.drop(deviceId);
  });
  return { inbox, events };
}

// What other areas use of this one (they import only this file).
export type { DeviceInbox, InboxEntry } from './inbox.js';
export { READ_BATCH } from './inbox.js';
