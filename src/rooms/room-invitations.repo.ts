import type { Collection, Db, Filter } from 'mongodb';
import type { BlockReason } from '../contacts/index.js';
import { isDuplicateKey } from '../platform/mongo.js';

export type RoomInvitationStatus = 'PENDING' | 'ACCEPTED' | 'DECLINED' | 'CANCELLED';

/**
 * An invitation into a room for a user the inviter is not connected to (issue 32): until the invitee
 * accepts, they are not a member. `_id` is `<roomId>:<inviteeId>`: one invitation per room and
 * invitee, renewed when someone invites again after it was answered.
 */
export interface RoomInvitationDoc {
  _id: string;
  roomId: string;
  inviteeId: string;
  inviterId: string;
  status: RoomInvitationStatus;
  declineReason: BlockReason | null;
  createdAt: Date;
  answeredAt: Date | null;
}

const idOf = (roomId: string, inviteeId: string) => `${roomId}:${inviteeId}`;

export class RoomInvitationsRepo {
  private readonly collection: Collection<RoomInvitationDoc>;

  constructor(db: Db) {
    this.collection = db.collection<RoomInvitationDoc>('room_invitations');
  }

  async ensureIndexes(): Promise<void> {
    await this.collection.createIndexes([
      { key: { inviteeId: 1, status: 1, createdAt: -1 }, name: 'pending_of_invitee' },
      { key: { roomId: 1, status: 1 }, name: 'pending_of_room' },
    ]);
  }

  /**
   * Makes the invitation pending: a new one, or one that was cancelled or accepted before (the
   * invitee left since). A declined invitation stays declined: the room cannot ask again. Says
   * whether it is newly pending, and otherwise what stands.
   */
  async invite(roomId: string, inviteeId: string, inviterId: string, now: Date): Promise<{ created: true; invitation: RoomInvitationDoc } | { created: false; invitation: RoomInvitationDoc | null }> {
    const invitation: RoomInvitationDoc = { _id: idOf(roomId, inviteeId), roomId, inviteeId, inviterId, status: 'PENDING', declineReason: null, createdAt: now, answeredAt: null };
    if (await this.collection.findOneAndReplace({ _id: invitation._id, status: { $in: ['CANCELLED', 'ACCEPTED'] } }, invitation)) return { created: true, invitation };
    try {
      await this.collection.insertOne(invitation);
      return { created: true, invitation };
    } catch (error) {
      if (!isDuplicateKey(error)) throw error;
      return { created: false, invitation: await this.find(roomId, inviteeId) };
    }
  }

  find(roomId: string, inviteeId: string): Promise<RoomInvitationDoc | null> {
    return this.collection.findOne({ _id: idOf(roomId, inviteeId) });
  }

  /** Answers (or cancels) a pending invitation; the row after, or null when it was not pending. */
  close(roomId: string, inviteeId: string, status: Exclude<RoomInvitationStatus, 'PENDING'>, reason: BlockReason | null, now: Date): Promise<RoomInvitationDoc | null> {
    return this.collection.findOneAndUpdate(
      { _id: idOf(roomId, inviteeId), status: 'PENDING' },
      { $set: { status, declineReason: reason, answeredAt: now } },
      { returnDocument: 'after' },
    );
  }

  /** A user's pending invitations, newest first. */
  pendingForInvitee(inviteeId: string, skip: number, limit: number): Promise<{ items: RoomInvitationDoc[]; total: number }> {
    return this.pendingPage({ inviteeId, status: 'PENDING' }, skip, limit);
  }

  /** A room's pending invitations, newest first. */
  pendingOfRoom(roomId: string, skip: number, limit: number): Promise<{ items: RoomInvitationDoc[]; total: number }> {
    return this.pendingPage({ roomId, status: 'PENDING' }, skip, limit);
  }

  private async pendingPage(filter: Filter<RoomInvitationDoc>, skip: number, limit: number): Promise<{ items: RoomInvitationDoc[]; total: number }> {
    const [items, total] = await Promise.all([this.collection.find(filter).sort({ createdAt: -1, _id: 1 }).skip(skip).limit(limit).toArray(), this.collection.countDocuments(filter)]);
    return { items, total };
  }

  /** Cancels what either of two users invited the other to (after a block). */
  async cancelBetween(a: string, b: string, now: Date): Promise<void> {
    await this.collection.updateMany(
      { status: 'PENDING', $or: [{ inviterId: a, inviteeId: b }, { inviterId: b, inviteeId: a }] },
      { $set: { status: 'CANCELLED', answeredAt: now } },
    );
  }

  /** Every pending invitation to or from a user cancelled (their account was deleted). */
  async cancelAllOf(userId: string, now: Date): Promise<void> {
    await this.collection.updateMany({ status: 'PENDING', $or: [{ inviterId: userId }, { inviteeId: userId }] }, { $set: { status: 'CANCELLED', answeredAt: now } });
  }

  /** How many invitations wait for a user (all are from people they are not connected to). */
  countPendingFor(inviteeId: string): Promise<number> {
    return this.collection.countDocuments({ inviteeId, status: 'PENDING' });
  }

  /** How many invitations of one inviter wait for one invitee, across rooms. */
  countPendingBetween(inviterId: string, inviteeId: string): Promise<number> {
    return this.collection.countDocuments({ inviterId, inviteeId, status: 'PENDING' });
  }
}
