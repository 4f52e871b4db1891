
import type { Principal } from '../platform/principal.js';
import type { CallsRepo } from './calls.repo.js';
import type { CallsService, CallView } from './calls.service.js';
import type { RoomCallDoc } from './room-calls.repo.js';
import type { RoomCallsService, RoomCallView } from './room-calls.service.js';
import { CallsErrors } from './calls.errors.js';

/**
 * The one place that tells a 1:1 call from a room call by its id: the endpoints both kinds share,
 * the ring timeout, the minute clean-up and hanging up a revoked device all come here.
 */
export class AnyCallService {
  constructor(
    private readonly deps: { calls: CallsService; roomCalls: RoomCallsService; callsRepo: CallsRepo },
  ) {}

  private async either<T, U>(callId: string, direct: () => Promise<T>, room: (call: RoomCallDoc) => Promise<U>): Promise<T | U> {
    const call = await this.deps.roomCalls.findById(callId);
    return call ? room(call) : direct();
  }

  /** The room call with this id, for the media endpoints; a 1:1 call's media flows peer to peer. */
  async roomCall(callId: string): Promise<RoomCallDoc> {
    const call = await this.deps.roomCalls.findById(callId);
    if (!call) throw CallsErrors.CALL_NOT_IN_ROOM();
    return call;
  }

  get(principal: Principal, callId: string): Promise<CallView | RoomCallView> {
    return this.either(callId, () => this.deps.calls.get(principal, callId), (call) => this.deps.roomCalls.get(principal, call));
  }

  /** Answer a 1:1 call, or join a room call. */
  answer(principal: Principal, callId: string): Promise<CallView | RoomCallView> {
    return this.either(callId, () => this.deps.calls.answer(principal, callId), (call) => this.deps.roomCalls.join(principal, call));
  }

  /** Reject a 1:1 call, or decline a room call (this user's devices stop ringing). */
  reject(principal: Principal, callId: string): Promise<CallView | RoomCallView> {
    return this.either(callId, () => this.deps.calls.reject(principal, callId), (call) => this.deps.roomCalls.decline(principal, call));
  }

  /** Hang up a 1:1 call, or leave a room call. */
  end(principal: Principal, callId: string): Promise<CallView | RoomCallView> {
    return this.either(callId, () => this.deps.calls.end(principal, callId), (call) => this.deps.roomCalls.leave(principal, call));
  }

  /** Ring time over: a 1:1 call still ringing ends as missed; a room call stops ringing (or ends as missed). */
  timeout(callId: string): Promise<void> {
    return this.either(callId, () => this.deps.calls.timeout(callId), () => this.deps.roomCalls.timeout(callId));
  }

  /** A device signed out or revoked during a call hangs it up, so it is not left in it, busy. */
  async hangUpDevice(device: { deviceId: string; userId: string }): Promise<void> {
    const callId = await this.deps.callsRepo.callOfDevice(device.deviceId);
    if (callId) await this.end(device, callId);
  }

  /**
   * The minute clean-up's part: ends 1:1 calls whose ring timeout job was lost, and room calls whose
   * media server went away.
   */
  async cleanUp(now: Date): Promise<{ missedCalls: number; orphanedRoomCalls: number }> {
    const due = await this.deps.callsRepo.ringingDue(now);
    for (const call of due) await this.deps.calls.timeout(call._id);
    return { missedCalls: due.length, orphanedRoomCalls: await this.deps.roomCalls.endOrphaned() };
  }
}
