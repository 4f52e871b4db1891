import type { Collection, Db } from 'mongodb';
import { isDuplicateKey } from '../platform/mongo.js';
import type { CallMedia } from '../platform/device-events.js';

export type CallState = 'RINGING' | 'ACTIVE' | 'ENDED';
export type CallEndReason = 'HANGUP' | 'MISSED' | 'REJECTED' | 'CANCELLED' | 'FAILED';

export interface CallDoc {
  _id: string;
  callerId: string;
  callerDeviceId: string;
  calleeId: string;
  media: CallMedia;
  state: CallState;
  answeredByDeviceId: string | null;
  endReason: CallEndReason | null;
  endedBy: string | null;
  createdAt: Date;
  ringUntil: Date;
  answeredAt: Date | null;
  endedAt: Date | null;
}

/** A device taking part in a call: `_id` is the device id, so a device holds at most one call. */
interface DeviceCallDoc {
  _id: string;
  callId: string;
  since: Date;
}

export class CallsRepo {
  readonly calls: Collection<CallDoc>;
  private readonly deviceCalls: Collection<DeviceCallDoc>;

  constructor(db: Db) {
    this.calls = db.collection<CallDoc>('calls');
    this.deviceCalls = db.collection<DeviceCallDoc>('device_calls');
  }

  async ensureIndexes(): Promise<void> {
    await this.calls.createIndexes([
      { key: { callerId: 1, createdAt: -1 }, name: 'calls_by_caller' },
      { key: { calleeId: 1, createdAt: -1 }, name: 'calls_by_callee' },
      { key: { state: 1, ringUntil: 1 }, name: 'ringing_due' },
    ]);
  }

  async insert(call: CallDoc): Promise<void> {
    await this.calls.insertOne(call);
  }

  findById(id: string): Promise<CallDoc | null> {
    return this.calls.findOne({ _id: id });
  }

  /** Moves the call from `from` to a new state; null when it was no longer in `from` (someone else won). */
  transition(id: string, from: CallState, set: Partial<CallDoc>): Promise<CallDoc | null> {
    return this.calls.findOneAndUpdate({ _id: id, state: from }, { $set: set }, { returnDocument: 'after' });
  }

  /** Takes the device for a call; false when the device is already in a call. */
  async lockDevice(deviceId: string, callId: string, now: Date): Promise<boolean> {
    try {
      await this.deviceCalls.insertOne({ _id: deviceId, callId, since: now });
      return true;
    } catch (error) {
      if (isDuplicateKey(error)) return false;
      throw error;
    }
  }

  /** The call (1:1 or in a room) the device is in, if any. */
  async callOfDevice(deviceId: string): Promise<string | null> {
    return (await this.deviceCalls.findOne({ _id: deviceId }))?.callId ?? null;
  }

  async unlockDevices(callId: string, deviceIds: string[]): Promise<void> {
    await this.deviceCalls.deleteMany({ _id: { $in: deviceIds }, callId });
  }

  /** Ringing calls whose ring time is over (for the reconciler, should a timeout job be lost). */
  ringingDue(now: Date, limit = 100): Promise<CallDoc[]> {
    return this.calls.find({ state: 'RINGING', ringUntil: { $lte: now } }).limit(limit).toArray();
  }
}
