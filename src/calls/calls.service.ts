import { callRings } from '../users/index.js';
import type { Clock } from '../platform/clock.js';
import type { z } from 'zod';
import { randomUUID } from 'node:crypto';
import type { Principal } from '../platform/principal.js';
import { AppError } from '../platform/errors.js';
import type { CallEventData, CallMedia, DeviceEventMap, DeviceEvents } from '../platform/device-events.js';
import type { BlockReads } from '../contacts/index.js';
import type { CallDoc, CallEndReason, CallsRepo } from './calls.repo.js';
import type { ConnectionReads } from '../contacts/index.js';
import type { MembershipReads } from '../rooms/index.js';
import type { UserReads } from '../users/index.js';
import { CallsErrors } from './calls.errors.js';
import { UsersErrors } from '../users/users.errors.js';
import type { CallDtoSchema } from './calls.schemas.js';

/** As the CallDto record of the OpenAPI document. */
export type CallView = z.infer<typeof CallDtoSchema>;

const notFound = () => CallsErrors.CALL_NOT_FOUND();

export function presentCall(call: CallDoc): CallView {
  return {
    id: call._id,
    callerId: call.callerId,
    callerDeviceId: call.callerDeviceId,
    calleeId: call.calleeId,
    media: call.media,
    state: call.state,
    answeredByDeviceId: call.answeredByDeviceId,
    endReason: call.endReason,
    createdAt: call.createdAt.toISOString(),
    ringUntil: call.ringUntil.toISOString(),
    answeredAt: call.answeredAt?.toISOString() ?? null,
    endedAt: call.endedAt?.toISOString() ?? null,
  };
}

/**
 * One-to-one call signalling: ring, answer (first device wins), reject, end, ring timeout, and the
 * relay of SDP and ICE candidates between the two devices in the call. Media flows peer to peer
 * through the ICE servers of IceService.
 */
export class CallsService {
  constructor(
    private readonly deps: {
      calls: CallsRepo;
      users: UserReads;
      blocks: BlockReads;
      connections: ConnectionReads;
      roomMembers: MembershipReads;
      events: DeviceEvents;
      ringTimeoutSeconds: number;
      scheduleTimeout: (callId: string, delayMs: number) => Promise<void>;
      clock: Clock;
    },
  ) {}

  private now(): Date {
    return this.deps.clock();
  }

  private data(call: CallDoc): CallEventData {
    return { callId: call._id, callerId: call.callerId, callerDeviceId: call.callerDeviceId, calleeId: call.calleeId, media: call.media, state: call.state };
  }

  /** Starts a call from the caller's device to every device of the callee. */
  async start(principal: Principal, input: { calleeId: string; media: CallMedia }): Promise<CallView> {
    const { calls, users, blocks, connections, roomMembers, events } = this.deps;
    if (input.calleeId === principal.userId) throw CallsErrors.CALL_SELF();
    const callee = await users.findById(input.calleeId);
    if (!callee || callee.deletedAt) throw UsersErrors.USER_NOT_FOUND();
    // Calls go between connected users or people sharing a room; a block either way refuses them,
    // and so does the callee's disableIncomingCalls for this connection. The caller is not told which.
    const [connection, sharing, blockedByCallee, blockedByCaller] = await Promise.all([
      connections.find(principal.userId, callee._id),
      roomMembers.sharingARoom(principal.userId, [callee._id]),
      blocks.isBlocked(callee._id, principal.userId),
      blocks.isBlocked(principal.userId, callee._id),
    ]);
    const callsDisabled = connection?.incomingCallsDisabledBy.includes(callee._id) ?? false;
    if ((!connection && sharing.size === 0) || blockedByCallee || blockedByCaller || callsDisabled) {
      throw CallsErrors.CALL_NOT_ALLOWED();
    }

    const now = this.now();
    const call: CallDoc = {
      _id: randomUUID(),
      callerId: principal.userId,
      callerDeviceId: principal.deviceId,
      calleeId: callee._id,
      media: input.media,
      state: 'RINGING',
      answeredByDeviceId: null,
      endReason: null,
      endedBy: null,
      createdAt: now,
      ringUntil: new Date(now.getTime() + this.deps.ringTimeoutSeconds * 1000),
      answeredAt: null,
      endedAt: null,
    };
    if (!(await calls.lockDevice(principal.deviceId, call._id, now))) throw CallsErrors.DEVICE_BUSY();
    try {
      await calls.insert(call);
      await this.deps.scheduleTimeout(call._id, this.deps.ringTimeoutSeconds * 1000);
    } catch (error) {
      await calls.unlockDevices(call._id, [principal.deviceId]);
      throw error;
    }
    // The callee in do-not-disturb or quiet hours: only a connection's call rings (VoIP push), and only
    // when they allow it; any other still reaches their open app, without a ring.
    const rings = callRings(callee.notifications, now, connection !== null);
    await events.toUsers([callee._id], 'call.incoming', this.data(call), rings ? {} : { push: false });
    return presentCall(call);
  }

  async get(principal: Principal, callId: string): Promise<CallView> {
    return presentCall(await this.participantCall(principal, callId));
  }

  /** The first of the callee's devices to answer takes the call; the others stop ringing. */
  async answer(principal: Principal, callId: string): Promise<CallView> {
    const { calls } = this.deps;
    const call = await this.participantCall(principal, callId);
    if (call.calleeId !== principal.userId) throw CallsErrors.CALL_NOT_CALLEE({ message: 'Only the callee can answer' });
    if (call.state === 'ACTIVE') throw CallsErrors.CALL_ALREADY_ANSWERED();
    if (call.state !== 'RINGING') throw CallsErrors.CALL_NOT_RINGING();
    const now = this.now();
    if (!(await calls.lockDevice(principal.deviceId, call._id, now))) throw CallsErrors.DEVICE_BUSY();
    const answered = await calls.transition(call._id, 'RINGING', { state: 'ACTIVE', answeredByDeviceId: principal.deviceId, answeredAt: now });
    if (!answered) {
      await calls.unlockDevices(call._id, [principal.deviceId]);
      const current = await calls.findById(call._id);
      throw current?.state === 'ACTIVE'
        ? CallsErrors.CALL_ALREADY_ANSWERED()
        : CallsErrors.CALL_NOT_RINGING();
    }
    await this.tell(answered, 'call.answered', { ...this.data(answered), answeredByDeviceId: principal.deviceId });
    return presentCall(answered);
  }

  /** The callee declines while it rings. */
  async reject(principal: Principal, callId: string): Promise<CallView> {
    const call = await this.participantCall(principal, callId);
    if (call.calleeId !== principal.userId) throw CallsErrors.CALL_NOT_CALLEE({ message: 'Only the callee can reject' });
    return this.finish(call, 'RINGING', 'REJECTED', principal.userId);
  }

  /** Either side hangs up; a caller hanging up while it rings cancels it. */
  async end(principal: Principal, callId: string): Promise<CallView> {
    const call = await this.participantCall(principal, callId);
    if (call.state === 'ENDED') return presentCall(call);
    if (call.state === 'RINGING' && call.callerId === principal.userId) return this.finish(call, 'RINGING', 'CANCELLED', principal.userId);
    if (call.state === 'RINGING') return this.finish(call, 'RINGING', 'REJECTED', principal.userId);
    return this.finish(call, 'ACTIVE', 'HANGUP', principal.userId);
  }

  /** Ring timeout (a delayed job): a call still ringing ends as missed. */
  async timeout(callId: string): Promise<void> {
    const call = await this.deps.calls.findById(callId);
    if (!call || call.state !== 'RINGING') return;
    if (call.ringUntil.getTime() > this.now().getTime()) return;
    await this.finish(call, 'RINGING', 'MISSED', null).catch((error: unknown) => {
      if (!(error instanceof AppError)) throw error;
    });
  }

  /** Relays an SDP offer/answer or ICE candidate to the other device of an active call. */
  async signal(principal: Principal, callId: string, input: { kind: 'offer' | 'answer' | 'candidate'; payload: unknown }): Promise<void> {
    const call = await this.participantCall(principal, callId);
    if (call.state !== 'ACTIVE') throw CallsErrors.CALL_NOT_ACTIVE({ message: 'Signals flow once the call is answered' });
    const peer =
      principal.deviceId === call.callerDeviceId ? call.answeredByDeviceId : principal.deviceId === call.answeredByDeviceId ? call.callerDeviceId : null;
    if (!peer) throw CallsErrors.CALL_NOT_IN_CALL();
    await this.deps.events.toDevice(peer, 'call.signal', { callId, fromDeviceId: principal.deviceId, kind: input.kind, payload: input.payload });
  }

  private async finish(call: CallDoc, from: 'RINGING' | 'ACTIVE', reason: CallEndReason, endedBy: string | null): Promise<CallView> {
    const ended = await this.deps.calls.transition(call._id, from, { state: 'ENDED', endReason: reason, endedBy, endedAt: this.now() });
    if (!ended) {
      const current = await this.deps.calls.findById(call._id);
      if (current?.state === 'ENDED') return presentCall(current);
      throw (from === 'RINGING' ? CallsErrors.CALL_NOT_RINGING : CallsErrors.CALL_NOT_ACTIVE)({ message: 'The call changed meanwhile; fetch it again' });
    }
    await this.deps.calls.unlockDevices(ended._id, [ended.callerDeviceId, ...(ended.answeredByDeviceId ? [ended.answeredByDeviceId] : [])]);
    await this.tell(ended, 'call.ended', { ...this.data(ended), endedBy, reason });
    return presentCall(ended);
  }

  /** Tells the caller's device and every device of the callee. */
  private async tell<K extends 'call.answered' | 'call.ended'>(call: CallDoc, event: K, data: DeviceEventMap[K]): Promise<void> {
    await Promise.all([this.deps.events.toDevice(call.callerDeviceId, event, data), this.deps.events.toUsers([call.calleeId], event, data)]);
  }

  private async participantCall(principal: Principal, callId: string): Promise<CallDoc> {
    const call = await this.deps.calls.findById(callId);
    if (!call) throw notFound();
    const isCaller = call.callerId === principal.userId && call.callerDeviceId === principal.deviceId;
    if (!isCaller && call.calleeId !== principal.userId) throw notFound();
    return call;
  }
}
