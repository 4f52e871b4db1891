import type { Collection, Db } from 'mongodb';
import { findByIds, isDuplicateKey } from '../platform/mongo.js';
import type { CallMedia } from '../platform/device-events.js';

export type RoomCallEndReason = 'HANGUP' | 'MISSED' | 'FAILED';

export interface RoomCallParticipant {
  deviceId: string;
  userId: string;
  joinedAt: Date;
}

/** A call in a room: live from the start, members join and leave; media through one SFU node. */
export interface RoomCallDoc {
  _id: string;
  roomId: string;
  startedBy: string;
  startedByDeviceId: string;
  media: CallMedia;
  state: 'ACTIVE' | 'ENDED';
  /** The SFU node holding the call's router. */
  sfuNodeId: string;
  participants: RoomCallParticipant[];
  participantCount: number;
  /** Users who joined at some point (a call nobody else joined ends as missed at the ring timeout). */
  joinedUserIds: string[];
  declinedBy: string[];
  endReason: RoomCallEndReason | null;
  createdAt: Date;
  ringUntil: Date;
  endedAt: Date | null;
}

/** The room's current call: `_id` is the room id, so a room has at most one call at a time. */
interface RoomCallLockDoc {
  _id: string;
  callId: string;
}

export class RoomCallsRepo {
  readonly calls: Collection<RoomCallDoc>;
  private readonly locks: Collection<RoomCallLockDoc>;

  constructor(db: Db) {
    this.calls = db.collection<RoomCallDoc>('room_calls');
    this.locks = db.collection<RoomCallLockDoc>('room_call_locks');
  }

  async ensureIndexes(): Promise<void> {
    await this.calls.createIndexes([
      { key: { roomId: 1, createdAt: -1 }, name: 'room_calls_by_room' },
      { key: { state: 1 }, name: 'room_calls_by_state' },
    ]);
  }

  /** Takes the room for a call; the id of the call already there when it is taken. */
  async lockRoom(roomId: string, callId: string): Promise<string | null> {
    try {
      await this.locks.insertOne({ _id: roomId, callId });
      return null;
    } catch (error) {
      if (!isDuplicateKey(error)) throw error;
      return (await this.locks.findOne({ _id: roomId }))?.callId ?? null;
    }
  }

  async unlockRoom(roomId: string, callId: string): Promise<void> {
    await this.locks.deleteOne({ _id: roomId, callId });
  }

  /** The calls in progress in the given rooms, by room id: two `_id` lookups, whatever the count. */
  async activeCallsOf(roomIds: string[]): Promise<Map<string, RoomCallDoc>> {
    if (roomIds.length === 0) return new Map();
    const locks = await findByIds(this.locks, roomIds);
    if (locks.length === 0) return new Map();
    const calls = await findByIds(this.calls, locks.map((lock) => lock.callId));
    return new Map(calls.filter((call) => call.state === 'ACTIVE').map((call) => [call.roomId, call]));
  }

  async currentCallId(roomId: string): Promise<string | null> {
    return (await this.locks.findOne({ _id: roomId }))?.callId ?? null;
  }

  async insert(call: RoomCallDoc): Promise<void> {
    await this.calls.insertOne(call);
  }

  findById(id: string): Promise<RoomCallDoc | null> {
    return this.calls.findOne({ _id: id });
  }

  /** Adds the device while the call is live and has room; null when it is full or over. */
  join(id: string, participant: RoomCallParticipant, maxParticipants: number): Promise<RoomCallDoc | null> {
    return this.calls.findOneAndUpdate(
      { _id: id, state: 'ACTIVE', participantCount: { $lt: maxParticipants } },
      { $push: { participants: participant }, $inc: { participantCount: 1 }, $addToSet: { joinedUserIds: participant.userId } },
      { returnDocument: 'after' },
    );
  }

  /** Removes the device; null when it was not in the live call. */
  leave(id: string, deviceId: string): Promise<RoomCallDoc | null> {
    return this.calls.findOneAndUpdate(
      { _id: id, state: 'ACTIVE', 'participants.deviceId': deviceId },
      { $pull: { participants: { deviceId } }, $inc: { participantCount: -1 } },
      { returnDocument: 'after' },
    );
  }

  decline(id: string, userId: string): Promise<RoomCallDoc | null> {
    return this.calls.findOneAndUpdate({ _id: id, state: 'ACTIVE' }, { $addToSet: { declinedBy: userId } }, { returnDocument: 'after' });
  }

  /** Ends the live call; null when it had ended already. */
  end(id: string, reason: RoomCallEndReason, now: Date): Promise<RoomCallDoc | null> {
    return this.calls.findOneAndUpdate({ _id: id, state: 'ACTIVE' }, { $set: { state: 'ENDED', endReason: reason, endedAt: now } }, { returnDocument: 'before' });
  }

  /** Live calls (for the reconciler that ends calls whose media server went away). */
  active(limit = 500): Promise<RoomCallDoc[]> {
    return this.calls.find({ state: 'ACTIVE' }).limit(limit).toArray();
  }
}
