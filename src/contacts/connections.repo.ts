import type { Collection, Db } from 'mongodb';

/** A connection between two users; `_id` is the two ids sorted and joined, so a pair is unique. */
export interface ConnectionDoc {
  _id: string;
  userIds: [string, string];
  /** Users in this connection who refuse incoming calls from the other. */
  incomingCallsDisabledBy: string[];
  createdAt: Date;
}

export const connectionId = (a: string, b: string) => [a, b].sort().join(':');

export class ConnectionsRepo {
  private readonly collection: Collection<ConnectionDoc>;

  constructor(db: Db) {
    this.collection = db.collection<ConnectionDoc>('connections');
  }

  async ensureIndexes(): Promise<void> {
    await this.collection.createIndexes([{ key: { userIds: 1 }, name: 'by_user' }]);
  }

  /** Connects two users; idempotent. */
  async connect(a: string, b: string, now: Date): Promise<void> {
    const pair: [string, string] = a < b ? [a, b] : [b, a];
    await this.collection.updateOne(
      { _id: connectionId(a, b) },
      { $setOnInsert: { userIds: pair, incomingCallsDisabledBy: [], createdAt: now } },
      { upsert: true },
    );
  }

  async remove(a: string, b: string): Promise<boolean> {
    return (await this.collection.deleteOne({ _id: connectionId(a, b) })).deletedCount === 1;
  }

  async pageForUser(userId: string, skip: number, limit: number): Promise<{ items: ConnectionDoc[]; total: number }> {
    const [items, total] = await Promise.all([
      this.collection.find({ userIds: userId }).sort({ createdAt: -1, _id: 1 }).skip(skip).limit(limit).toArray(),
      this.collection.countDocuments({ userIds: userId }),
    ]);
    return { items, total };
  }

  find(a: string, b: string): Promise<ConnectionDoc | null> {
    return this.collection.findOne({ _id: connectionId(a, b) });
  }

  /** Of `others`, those connected to `userId`. */
  async connectedAmong(userId: string, others: string[]): Promise<Set<string>> {
    const ids = others.map((other) => connectionId(userId, other));
    const rows = await this.collection.find({ _id: { $in: ids } }, { projection: { userIds: 1 } }).toArray();
    return new Set(rows.flatMap((row) => row.userIds).filter((id) => id !== userId));
  }

  async setIncomingCallsDisabled(userId: string, otherId: string, disabled: boolean): Promise<ConnectionDoc | null> {
    const update = disabled ? { $addToSet: { incomingCallsDisabledBy: userId } } : { $pull: { incomingCallsDisabledBy: userId } };
    return this.collection.findOneAndUpdate({ _id: connectionId(userId, otherId) }, update, { returnDocument: 'after' });
  }

  /** Every connection of a user removed (their account was deleted). */
  async removeAllOf(userId: string): Promise<void> {
    await this.collection.deleteMany({ userIds: userId });
  }
}
