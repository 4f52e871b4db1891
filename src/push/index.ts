import type { DevicePushTokens } from '../devices/index.js';
import type { DeviceInbox } from '../inbox/index.js';
import type { Platform } from '../platform/platform.js';
import type { PresenceStore } from '../presence/index.js';
import { pushProviders } from './providers.js';
import { PushService } from './push.service.js';
import { MessagePushService, redisDeliveredLog } from './message-push.service.js';
import type { PushTarget } from './push.js';
import type { BlockReads } from '../contacts/index.js';
import type { ActivityReads, MessageReads } from '../messages/index.js';
import type { MembershipReads, RoomReads } from '../rooms/index.js';
import type { UserReads } from '../users/index.js';
import { QUEUES } from '../platform/queues.js';
import { mayNeedPush, PushReachStore } from './push-reach.js';

/**
 * Who a room's posts could be pushed to (PushReachStore), made before the areas that post: a post
 * asks it whether its push job is worth starting.
 */
export function pushReach(p: Platform, presence: PresenceStore) {
  const reach = new PushReachStore(p.redis, p.keys.push, p.cache);
  return { reach, mayNeedPush: (roomId: string, authorId: string) => mayNeedPush(reach, (deviceIds) => presence.onlineAmong(deviceIds), roomId, authorId) };
}

/**
 * Pushes to offline devices, in the worker. The providers (and their key files) are read on the
 * first push, so roles that never push never touch them.
 */
export function pushArea(
  p: Platform,
  deps: {
    devices: DevicePushTokens;
    inbox: DeviceInbox;
    presence: PresenceStore;
    messages: MessageReads;
    activity: ActivityReads;
    rooms: RoomReads;
    members: MembershipReads;
    blocks: BlockReads;
    users: UserReads;
    reach: PushReachStore;
  },
) {
  // What could add a device to a room's reach drops it: the next post's job learns it again.
  p.domainEvents.on('room.member-joined', ({ roomId }) => deps.reach.forget([roomId]));
  p.domainEvents.on('room.member-changed', ({ roomId }) => deps.reach.forget([roomId]));
  p.domainEvents.on('device.push-token-set', async ({ userId }) => deps.reach.forget(await deps.members.activeRoomIds(userId)));
  let providers: ReturnType<typeof pushProviders> | null = null;
  const open = () => (providers ??= pushProviders(p.config, p.db));
  const providerFor = (service: PushTarget['service']) => open().providerFor(service);
  return {
    push: new PushService(deps.devices, deps.inbox, deps.presence, providerFor),
    // Added together, the parts go to Redis in one write (the queues group what is added at once).
    messagePush: new MessagePushService({ ...deps, clock: p.clock, providerFor, partMembers: p.config.PUSH_PART_MEMBERS, delivered: redisDeliveredLog(p.redis, p.keys.pushDelivered), enqueueParts: async (jobs) => void (await Promise.all(jobs.map((job) => p.queues.add(QUEUES.messagePush, job)))) }),
    close: async () => providers?.close(),
  };
}
