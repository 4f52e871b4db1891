import { callRings, quietNow, type UserReads } from '../users/index.js';
import type { ConnectionReads } from '../contacts/index.js';
import type { Clock } from '../platform/clock.js';
import type { z } from 'zod';
import { randomUUID } from 'node:crypto';
import type { Principal } from '../platform/principal.js';
import type { CallMedia, DeviceEventMap, DeviceEvents, RoomCallEventData } from '../platform/device-events.js';
import type { CallsRepo } from './calls.repo.js';
import type { RoomCallDoc, RoomCallEndReason, RoomCallsRepo } from './room-calls.repo.js';
import type { MembershipReads } from '../rooms/index.js';
import type { RoomReads } from '../rooms/index.js';
import type { SfuClient } from '../sfu/index.js';
import type { ConsumerInfo, ProducerInfo, SfuOps, TransportInfo } from '../sfu/index.js';
import { isManager, type RoomsPolicy } from '../rooms/index.js';
import { CallsErrors } from './calls.errors.js';
import { RoomsErrors } from '../rooms/rooms.errors.js';
import { SfuErrors } from '../sfu/sfu.errors.js';
import type { RoomCallDtoSchema } from './calls.schemas.js';

/** As the RoomCallDto record of the OpenAPI document. */
export type RoomCallView = z.infer<typeof RoomCallDtoSchema>;

export function presentRoomCall(call: RoomCallDoc): RoomCallView {
  return {
    id: call._id,
    roomId: call.roomId,
    startedBy: call.startedBy,
    media: call.media,
    state: call.state,
    participants: call.participants.map((p) => ({ userId: p.userId, deviceId: p.deviceId, joinedAt: p.joinedAt.toISOString() })),
    endReason: call.endReason,
    createdAt: call.createdAt.toISOString(),
    ringUntil: call.ringUntil.toISOString(),
    endedAt: call.endedAt?.toISOString() ?? null,
  };
}

const notInCall = () => CallsErrors.CALL_NOT_IN_CALL();

/**
 * Calls in a room: anyone enabled in the room starts one (in a broadcast room, its creator or an
 * admin), every other enabled member's devices ring, members join and leave until the last one
 * leaves. Media goes through one SFU router per call (mediasoup on an sfu node), which the devices
 * drive through the media endpoints: transports, produce, consume.
 */
export class RoomCallsService {
  constructor(
    private readonly deps: {
      roomCalls: RoomCallsRepo;
      calls: CallsRepo;
      rooms: RoomReads;
      roomMembers: MembershipReads;
      policy: RoomsPolicy;
      events: DeviceEvents;
      users: Pick<UserReads, 'findManyByIds'>;
      connections: Pick<ConnectionReads, 'connectedAmong'>;
      sfu: SfuClient;
      ringTimeoutSeconds: number;
      maxParticipants: number;
      scheduleTimeout: (callId: string, delayMs: number) => Promise<void>;
      clock: Clock;
    },
  ) {}

  private now(): Date {
    return this.deps.clock();
  }

  /** Of `userIds`, those quiet now whom a call from `callerId` does not ring (see CallsService.start). */
  private async notRung(callerId: string, userIds: string[]): Promise<Set<string>> {
    const now = this.now();
    const quiet = (await this.deps.users.findManyByIds(userIds)).filter((user) => quietNow(user.notifications, now));
    if (quiet.length === 0) return new Set();
    const connected = await this.deps.connections.connectedAmong(callerId, quiet.map((user) => user._id));
    return new Set(quiet.filter((user) => !callRings(user.notifications, now, connected.has(user._id))).map((user) => user._id));
  }

  private data(call: RoomCallDoc): RoomCallEventData {
    return { callId: call._id, roomId: call.roomId, startedBy: call.startedBy, media: call.media };
  }

  findById(callId: string): Promise<RoomCallDoc | null> {
    return this.deps.roomCalls.findById(callId);
  }

  /** Starts the room's call with the caller's device in it and rings every other enabled member. */
  async start(principal: Principal, input: { roomId: string; media: CallMedia }): Promise<RoomCallView> {
    const { roomCalls, rooms, policy, calls, sfu } = this.deps;
    const room = await rooms.findById(input.roomId);
    if (!room) throw RoomsErrors.ROOM_NOT_FOUND({ message: 'No such room' });
    await policy.enabledMember(room._id, principal.userId);
    if (room.type === 'BROADCAST' && !isManager(room, principal.userId)) {
      throw CallsErrors.CALL_NOT_ALLOWED({ message: 'In a broadcast room only its creator and admins start calls' });
    }
    const sfuNodeId = await sfu.pickNode();
    const now = this.now();
    const call: RoomCallDoc = {
      _id: randomUUID(),
      roomId: room._id,
      startedBy: principal.userId,
      startedByDeviceId: principal.deviceId,
      media: input.media,
      state: 'ACTIVE',
      sfuNodeId,
      participants: [{ deviceId: principal.deviceId, userId: principal.userId, joinedAt: now }],
      participantCount: 1,
      joinedUserIds: [principal.userId],
      declinedBy: [],
      endReason: null,
      createdAt: now,
      ringUntil: new Date(now.getTime() + this.deps.ringTimeoutSeconds * 1000),
      endedAt: null,
    };
    let current = await roomCalls.lockRoom(room._id, call._id);
    if (current && (await roomCalls.findById(current))?.state !== 'ACTIVE') {
      // A lock left by a call that ended without releasing it (the process died in between).
      await roomCalls.unlockRoom(room._id, current);
      current = await roomCalls.lockRoom(room._id, call._id);
    }
    if (current) throw CallsErrors.ROOM_CALL_IN_PROGRESS({ details: [{ callId: current }] });
    if (!(await calls.lockDevice(principal.deviceId, call._id, now))) {
      await roomCalls.unlockRoom(room._id, call._id);
      throw CallsErrors.DEVICE_BUSY();
    }
    try {
      // The call's router is made on the node before anyone rings: a node that cannot carry media
      // (its worker gone) answers 503 SFU_UNAVAILABLE here, not after the members were rung.
      await sfu.send(sfuNodeId, 'capabilities', { callId: call._id });
      await roomCalls.insert(call);
      await sfu.track(call._id, sfuNodeId);
      await this.deps.scheduleTimeout(call._id, this.deps.ringTimeoutSeconds * 1000);
    } catch (error) {
      await Promise.all([
        calls.unlockDevices(call._id, [principal.deviceId]),
        roomCalls.unlockRoom(room._id, call._id),
        sfu.send(sfuNodeId, 'close', { callId: call._id }).catch(() => undefined),
        sfu.untrack(call._id).catch(() => undefined),
      ]);
      throw error;
    }
    const members = (await this.deps.roomMembers.enabledMemberIds(room._id)).filter((id) => id !== principal.userId);
    // Members in do-not-disturb or quiet hours are rung (a VoIP push) only by a connection, when they
    // allow it; the others hear of the call in an open app, without a ring.
    const silent = await this.notRung(principal.userId, members);
    await this.deps.events.toUsers(members.filter((id) => !silent.has(id)), 'room-call.incoming', this.data(call));
    if (silent.size > 0) await this.deps.events.toUsers([...silent], 'room-call.incoming', this.data(call), { push: false });
    return presentRoomCall(call);
  }

  /** The room's call going on now, for members joining late; null when there is none. */
  async current(principal: Principal, roomId: string): Promise<RoomCallView | null> {
    await this.deps.policy.enabledMember(roomId, principal.userId);
    const callId = await this.deps.roomCalls.currentCallId(roomId);
    const call = callId ? await this.deps.roomCalls.findById(callId) : null;
    return call && call.state === 'ACTIVE' ? presentRoomCall(call) : null;
  }

  async get(principal: Principal, call: RoomCallDoc): Promise<RoomCallView> {
    await this.memberOf(principal, call);
    return presentRoomCall(call);
  }

  /** This device joins (answers); the user's other devices stop ringing. */
  async join(principal: Principal, call: RoomCallDoc): Promise<RoomCallView> {
    const { roomCalls, calls } = this.deps;
    await this.memberOf(principal, call);
    if (call.state !== 'ACTIVE') throw CallsErrors.CALL_NOT_ACTIVE({ message: 'The call is over' });
    if (call.participants.some((p) => p.deviceId === principal.deviceId)) return presentRoomCall(call);
    const now = this.now();
    if (!(await calls.lockDevice(principal.deviceId, call._id, now))) throw CallsErrors.DEVICE_BUSY();
    const joined = await roomCalls.join(call._id, { deviceId: principal.deviceId, userId: principal.userId, joinedAt: now }, this.deps.maxParticipants);
    if (!joined) {
      await calls.unlockDevices(call._id, [principal.deviceId]);
      const latest = await roomCalls.findById(call._id);
      if (latest?.state !== 'ACTIVE') throw CallsErrors.CALL_NOT_ACTIVE({ message: 'The call is over' });
      throw CallsErrors.CALL_FULL({ message: `A room call holds at most ${this.deps.maxParticipants} devices` });
    }
    const event = { ...this.data(joined), userId: principal.userId, deviceId: principal.deviceId };
    await this.tellParticipants(joined, 'room-call.joined', event, [principal.userId]);
    return presentRoomCall(joined);
  }

  /** The user declines: their devices stop ringing. The call goes on. */
  async decline(principal: Principal, call: RoomCallDoc): Promise<RoomCallView> {
    await this.memberOf(principal, call);
    if (call.state !== 'ACTIVE') throw CallsErrors.CALL_NOT_ACTIVE({ message: 'The call is over' });
    if (call.participants.some((p) => p.userId === principal.userId)) throw CallsErrors.CALL_ALREADY_JOINED();
    const declined = (await this.deps.roomCalls.decline(call._id, principal.userId)) ?? call;
    await this.deps.events.toUsers([principal.userId], 'room-call.ring-stopped', { ...this.data(call), reason: 'DECLINED' });
    return presentRoomCall(declined);
  }

  /** This device leaves; the call ends when the last device has left. Leaving twice changes nothing. */
  async leave(principal: Principal, call: RoomCallDoc): Promise<RoomCallView> {
    const { roomCalls, calls, sfu } = this.deps;
    await this.memberOf(principal, call).catch((error: unknown) => {
      // Someone removed from the room meanwhile can still hang up.
      if (!call.participants.some((p) => p.deviceId === principal.deviceId)) throw error;
    });
    const left = await roomCalls.leave(call._id, principal.deviceId);
    if (!left) return presentRoomCall((await roomCalls.findById(call._id)) ?? call);
    await calls.unlockDevices(call._id, [principal.deviceId]);
    const { closedProducerIds } = await sfu.send(call.sfuNodeId, 'leave', { callId: call._id, deviceId: principal.deviceId }).catch(() => ({ closedProducerIds: [] }));
    if (left.participantCount <= 0) return presentRoomCall((await this.finish(left, 'HANGUP')) ?? left);
    await this.tellParticipants(left, 'room-call.left', { ...this.data(left), userId: principal.userId, deviceId: principal.deviceId, closedProducerIds }, [principal.userId], principal.deviceId);
    return presentRoomCall(left);
  }

  /** Ring timeout: a call nobody else joined ends as missed; otherwise the rest stop ringing. */
  async timeout(callId: string): Promise<void> {
    const call = await this.deps.roomCalls.findById(callId);
    if (!call || call.state !== 'ACTIVE' || call.ringUntil.getTime() > this.now().getTime()) return;
    if (call.joinedUserIds.length <= 1) {
      await this.finish(call, 'MISSED');
      return;
    }
    const members = await this.deps.roomMembers.enabledMemberIds(call.roomId);
    const ringing = members.filter((id) => !call.joinedUserIds.includes(id) && !call.declinedBy.includes(id));
    await this.deps.events.toUsers(ringing, 'room-call.ring-stopped', { ...this.data(call), reason: 'MISSED' });
  }

  /**
   * Ends, as FAILED, the calls whose media is gone: a node reported them lost, or the node stopped
   * announcing itself. The worker role runs this every second (SFU_WATCH_EVERY_MS).
   */
  async endLostMedia(): Promise<number> {
    let ended = 0;
    for (const callId of await this.deps.sfu.lostCalls()) {
      const call = await this.deps.roomCalls.findById(callId);
      if (call?.state === 'ACTIVE' && (await this.finish(call, 'FAILED'))) ended++;
      else await this.deps.sfu.untrack(callId);
    }
    return ended;
  }

  /** Ends live calls whose media server went away (the minute clean-up: a backstop to endLostMedia when Redis lost its record of calls). */
  async endOrphaned(): Promise<number> {
    let ended = 0;
    for (const call of await this.deps.roomCalls.active()) {
      if (!(await this.deps.sfu.isAlive(call.sfuNodeId)) && (await this.finish(call, 'FAILED'))) ended++;
    }
    return ended;
  }

  // Media: each operation is this device's, in a call it has joined, on the call's SFU node.

  async capabilities(principal: Principal, call: RoomCallDoc): Promise<SfuOps['capabilities']['response']> {
    this.participant(principal, call);
    return this.deps.sfu.send(call.sfuNodeId, 'capabilities', { callId: call._id });
  }

  async createTransport(principal: Principal, call: RoomCallDoc, input: { direction: 'send' | 'recv'; type: 'webrtc' | 'plain' }): Promise<TransportInfo> {
    this.participant(principal, call);
    return this.deps.sfu.send(call.sfuNodeId, 'transport', { callId: call._id, deviceId: principal.deviceId, ...input });
  }

  async connectTransport(principal: Principal, call: RoomCallDoc, transportId: string, input: { dtlsParameters?: unknown; ip?: string; port?: number }): Promise<void> {
    this.participant(principal, call);
    await this.deps.sfu.send(call.sfuNodeId, 'connect', { callId: call._id, deviceId: principal.deviceId, transportId, ...input });
  }

  async produce(principal: Principal, call: RoomCallDoc, transportId: string, input: { kind: 'audio' | 'video'; rtpParameters: unknown }): Promise<ProducerInfo> {
    this.participant(principal, call);
    if (input.kind === 'video' && call.media === 'AUDIO') throw SfuErrors.MEDIA_REJECTED({ message: 'This is an audio call' });
    const producer = await this.deps.sfu.send(call.sfuNodeId, 'produce', { callId: call._id, deviceId: principal.deviceId, userId: principal.userId, transportId, ...input });
    const others = call.participants.filter((p) => p.deviceId !== principal.deviceId).map((p) => p.deviceId);
    const event = { ...this.data(call), producerId: producer.producerId, userId: principal.userId, deviceId: principal.deviceId, kind: producer.kind };
    await Promise.all(others.map((deviceId) => this.deps.events.toDevice(deviceId, 'room-call.media-added', event)));
    return producer;
  }

  async consume(principal: Principal, call: RoomCallDoc, transportId: string, input: { producerId: string; rtpCapabilities: unknown }): Promise<ConsumerInfo> {
    this.participant(principal, call);
    return this.deps.sfu.send(call.sfuNodeId, 'consume', { callId: call._id, deviceId: principal.deviceId, transportId, ...input });
  }

  async resume(principal: Principal, call: RoomCallDoc, consumerId: string): Promise<void> {
    this.participant(principal, call);
    await this.deps.sfu.send(call.sfuNodeId, 'resume', { callId: call._id, deviceId: principal.deviceId, consumerId });
  }

  async producers(principal: Principal, call: RoomCallDoc): Promise<ProducerInfo[]> {
    this.participant(principal, call);
    return (await this.deps.sfu.send(call.sfuNodeId, 'producers', { callId: call._id })).producers;
  }

  private participant(principal: Principal, call: RoomCallDoc): void {
    if (call.state !== 'ACTIVE') throw CallsErrors.CALL_NOT_ACTIVE({ message: 'The call is over' });
    if (!call.participants.some((p) => p.deviceId === principal.deviceId)) throw notInCall();
  }

  private async memberOf(principal: Principal, call: RoomCallDoc): Promise<void> {
    await this.deps.policy.enabledMember(call.roomId, principal.userId).catch(() => {
      throw CallsErrors.CALL_NOT_FOUND();
    });
  }

  /** Ends the call once: frees the room, the devices and the router, and tells every member. */
  private async finish(call: RoomCallDoc, reason: RoomCallEndReason): Promise<RoomCallDoc | null> {
    const { roomCalls, calls, sfu, roomMembers, events } = this.deps;
    const before = await roomCalls.end(call._id, reason, this.now());
    if (!before) return null;
    await Promise.all([
      roomCalls.unlockRoom(call.roomId, call._id),
      calls.unlockDevices(call._id, [...before.participants.map((p) => p.deviceId), call.startedByDeviceId]),
      sfu.send(call.sfuNodeId, 'close', { callId: call._id }).catch(() => undefined),
      sfu.untrack(call._id),
    ]);
    const members = await roomMembers.enabledMemberIds(call.roomId);
    await events.toUsers(members, 'room-call.ended', { ...this.data(call), reason });
    return roomCalls.findById(call._id);
  }

  /**
   * Tells the devices in the call and every device of `users` (e.g. the joiner's others, to stop
   * ringing), but `except` (the device that left knows it did).
   */
  private async tellParticipants<K extends 'room-call.joined' | 'room-call.left'>(call: RoomCallDoc, event: K, data: DeviceEventMap[K], users: string[], except?: string): Promise<void> {
    const inCall = call.participants.filter((p) => !users.includes(p.userId)).map((p) => p.deviceId);
    await Promise.all([...inCall.map((deviceId) => this.deps.events.toDevice(deviceId, event, data)), this.deps.events.toUsers(users, event, data, except === undefined ? {} : { exceptDeviceId: except })]);
  }
}
