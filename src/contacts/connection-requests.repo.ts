import type { Collection, Db } from 'mongodb';
import type { BlockReason } from './blocks.repo.js';

export type ConnectionRequestStatus = 'PENDING' | 'ACCEPTED' | 'DECLINED' | 'CANCELLED';

export interface ConnectionRequestDoc {
  _id: string;
  senderId: string;
  /** Null while the request is an invitation to someone who has no account yet. */
  recipientId: string | null;
  recipientPhone: string | null;
  recipientEmail: string | null;
  customMessage: string;
  status: ConnectionRequestStatus;
  declineReason: BlockReason | null;
  /**
   * While pending: the pair key (the two ids sorted, or the sender and the invited address), unique,
   * so one pair has one pending request. Once answered: the request's own id, which frees the pair.
   */
  pendingKey: string;
  createdAt: Date;
  answeredAt: Date | null;
  /** Invitations only: the SMS or e-mail's delivery, an outbox record a worker retries from. */
  invitation?: InvitationDelivery;
}

export interface InvitationDelivery {
  /** QUEUED: not sent yet; SENDING: one sender holds it until `leaseUntil`; SENT: done. */
  state: 'QUEUED' | 'SENDING' | 'SENT';
  leaseUntil: Date | null;
  attempts: number;
  sentAt: Date | null;
}

export const pairKey = (a: string, b: string) => [a, b].sort().join(':');

export class ConnectionRequestsRepo {
  private readonly collection: Collection<ConnectionRequestDoc>;

  constructor(db: Db) {
    this.collection = db.collection<ConnectionRequestDoc>('connection_requests');
  }

  async ensureIndexes(): Promise<void> {
    await this.collection.createIndexes([
      { key: { pendingKey: 1 }, name: 'one_pending_per_pair', unique: true },
      { key: { recipientId: 1, createdAt: -1 }, name: 'incoming' },
      { key: { senderId: 1, createdAt: -1 }, name: 'outgoing' },
      { key: { recipientPhone: 1, status: 1 }, name: 'invites_by_phone' },
    ]);
  }

  async insert(request: ConnectionRequestDoc): Promise<void> {
    await this.collection.insertOne(request);
  }

  findById(id: string): Promise<ConnectionRequestDoc | null> {
    return this.collection.findOne({ _id: id });
  }

  /** Answers a pending request addressed to `recipientId`; null when it is not pending (or not theirs). */
  answer(id: string, recipientId: string, status: 'ACCEPTED' | 'DECLINED', reason: BlockReason | null, now: Date): Promise<ConnectionRequestDoc | null> {
    return this.collection.findOneAndUpdate(
      { _id: id, recipientId, status: 'PENDING' },
      { $set: { status, declineReason: reason, answeredAt: now, pendingKey: id } },
      { returnDocument: 'after' },
    );
  }

  /** Cancels whatever is pending between two users (after a block). */
  async cancelBetween(a: string, b: string, now: Date): Promise<void> {
    const pending = await this.collection.findOne({ pendingKey: pairKey(a, b) });
    if (pending) await this.collection.updateOne({ _id: pending._id, status: 'PENDING' }, { $set: { status: 'CANCELLED', answeredAt: now, pendingKey: pending._id } });
  }

  /** Requests sent to or by the user, newest first. */
  async pageForUser(userId: string, skip: number, limit: number): Promise<{ items: ConnectionRequestDoc[]; total: number }> {
    const filter = { $or: [{ recipientId: userId }, { senderId: userId }] };
    const [items, total] = await Promise.all([
      this.collection.find(filter).sort({ createdAt: -1, _id: -1 }).skip(skip).limit(limit).toArray(),
      this.collection.countDocuments(filter),
    ]);
    return { items, total };
  }

  /** The pending request of a pair key, if any. */
  findPending(pendingKey: string): Promise<ConnectionRequestDoc | null> {
    return this.collection.findOne({ pendingKey });
  }

  /**
   * Takes an unsent invitation for sending, for `leaseMs`: one sender at a time; a sender that died
   * mid-way loses it when its lease runs out. Null when it is sent, taken, answered or addressed.
   */
  claimInvitation(id: string, now: Date, leaseMs: number): Promise<ConnectionRequestDoc | null> {
    return this.collection.findOneAndUpdate(
      {
        _id: id,
        recipientId: null,
        status: 'PENDING',
        $or: [{ 'invitation.state': 'QUEUED' }, { 'invitation.state': 'SENDING', 'invitation.leaseUntil': { $lt: now } }],
      },
      { $set: { 'invitation.state': 'SENDING', 'invitation.leaseUntil': new Date(now.getTime() + leaseMs) }, $inc: { 'invitation.attempts': 1 } },
      { returnDocument: 'after' },
    );
  }

  async markInvitationSent(id: string, now: Date): Promise<void> {
    await this.collection.updateOne({ _id: id, 'invitation.state': 'SENDING' }, { $set: { 'invitation.state': 'SENT', 'invitation.sentAt': now, 'invitation.leaseUntil': null } });
  }

  /** Gives an invitation back after a failed send, for the next try. */
  async releaseInvitation(id: string): Promise<void> {
    await this.collection.updateOne({ _id: id, 'invitation.state': 'SENDING' }, { $set: { 'invitation.state': 'QUEUED', 'invitation.leaseUntil': null } });
  }

  /** Invitations still waiting for this phone number or e-mail. */
  async openInvites(address: { phone?: string; email?: string }): Promise<ConnectionRequestDoc[]> {
    const or = [...(address.phone ? [{ recipientPhone: address.phone }] : []), ...(address.email ? [{ recipientEmail: address.email }] : [])];
    if (or.length === 0) return [];
    return this.collection.find({ recipientId: null, status: 'PENDING', $or: or }).toArray();
  }

  /**
   * Addresses a waiting invitation to the user: its pending key moves from the address to the user
   * pair. Null when it was claimed meanwhile; a duplicate-key error when the pair already has a
   * pending request.
   */
  addressInvite(inviteId: string, senderId: string, userId: string): Promise<ConnectionRequestDoc | null> {
    return this.collection.findOneAndUpdate(
      { _id: inviteId, recipientId: null, status: 'PENDING' },
      { $set: { recipientId: userId, pendingKey: pairKey(senderId, userId) } },
      { returnDocument: 'after' },
    );
  }

  /** The invitation lapses (its pending key becomes its own id, so it blocks nothing). */
  async cancelInvite(inviteId: string): Promise<void> {
    await this.collection.updateOne({ _id: inviteId }, { $set: { status: 'CANCELLED', pendingKey: inviteId } });
  }

  /** Every request and invitation a user sent or received removed (their account was deleted). */
  async removeAllOf(userId: string): Promise<void> {
    await this.collection.deleteMany({ $or: [{ senderId: userId }, { recipientId: userId }] });
  }
}
