import type { BlockReads, ConnectionReads } from '../contacts/index.js';
import type { DeviceEvents } from '../platform/device-events.js';
import type { Platform } from '../platform/platform.js';
import { narrow } from '../platform/narrow.js';
import { QUEUES } from '../platform/queues.js';
import type { MembershipReads, RoomReads, RoomsPolicy } from '../rooms/index.js';
import { SfuClient } from '../sfu/index.js';
import type { UserReads } from '../users/index.js';
import { AnyCallService } from './any-call.service.js';
import { CallsRepo } from './calls.repo.js';
import { CallsService } from './calls.service.js';
import { IceService } from './ice.service.js';
import { RoomCallsRepo } from './room-calls.repo.js';
import { RoomCallsService } from './room-calls.service.js';

/** Calls: 1:1 signalling with ICE servers, and calls in rooms through an SFU. */
export function callsArea(p: Platform, deps: { users: UserReads; blocks: BlockReads; connections: ConnectionReads; rooms: RoomReads; members: MembershipReads; roomsPolicy: RoomsPolicy; events: DeviceEvents }) {
  const { config } = p;
  const repos = { calls: new CallsRepo(p.db), roomCalls: new RoomCallsRepo(p.db) };
  const scheduleTimeout = (callId: string, delayMs: number) => p.queues.add(QUEUES.calls, { callId }, { delayMs });
  const calls = new CallsService({
    calls: repos.calls,
    users: deps.users,
    blocks: deps.blocks,
    connections: deps.connections,
    roomMembers: deps.members,
    events: deps.events,
    ringTimeoutSeconds: config.CALL_RING_TIMEOUT,
    scheduleTimeout,
    clock: p.clock,
  });
  const roomCalls = new RoomCallsService({
    roomCalls: repos.roomCalls,
    calls: repos.calls,
    rooms: deps.rooms,
    roomMembers: deps.members,
    policy: deps.roomsPolicy,
    events: deps.events,
    users: deps.users,
    connections: deps.connections,
    sfu: new SfuClient(p.redis, p.keys.sfu, config.SFU_SECRET),
    ringTimeoutSeconds: config.CALL_RING_TIMEOUT,
    maxParticipants: config.ROOM_CALL_MAX_PARTICIPANTS,
    scheduleTimeout,
    clock: p.clock,
  });
  const anyCall = new AnyCallService({ calls, roomCalls, callsRepo: repos.calls });
  p.domainEvents.on('device.revoked', (device) => anyCall.hangUpDevice(device));
  const ice = new IceService({ secret: config.TURN_SECRET, turnUrls: config.TURN_URLS, stunUrls: config.STUN_URLS, ttlSeconds: config.TURN_CREDENTIAL_TTL }, p.clock);
  return { repos, calls, roomCalls, anyCall, ice, roomCallReads: narrow(repos.roomCalls, ['activeCallsOf']) };
}
export type CallsArea = ReturnType<typeof callsArea>;

// What other areas use of this one (they import only this file).
export type { AnyCallService } from './any-call.service.js';

/** What other areas read of room calls: the calls under way in some rooms. */
export type RoomCallReads = CallsArea['roomCallReads'];
