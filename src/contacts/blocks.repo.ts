import type { Collection, Db } from 'mongodb';

export const BLOCK_REASONS = ['UNKNOWN', 'SPAM', 'HARASSMENT', 'INAPPROPRIATE_CONTENT', 'DONT_KNOW_PERSON', 'OTHER'] as const;
export type BlockReason = (typeof BLOCK_REASONS)[number];

/** `blockerId` blocked `blockedId`; `_id` is `<blockerId>:<blockedId>`, so a block is unique. */
export interface BlockDoc {
  _id: string;
  blockerId: string;
  blockedId: string;
  reason: BlockReason;
  createdAt: Date;
}

export class BlocksRepo {
  private readonly collection: Collection<BlockDoc>;

  constructor(db: Db) {
    this.collection = db.collection<BlockDoc>('blocks');
  }

  async ensureIndexes(): Promise<void> {
    await this.collection.createIndexes([{ key: { blockerId: 1, createdAt: -1 }, name: 'blocks_of_user' }]);
  }

  /** Records a block; false when it already existed. */
  async block(blockerId: string, blockedId: string, reason: BlockReason, now: Date): Promise<boolean> {
    const result = await this.collection.updateOne(
      { _id: `${blockerId}:${blockedId}` },
      { $setOnInsert: { blockerId, blockedId, reason, createdAt: now } },
      { upsert: true },
    );
    return result.upsertedCount === 1;
  }

  async unblock(blockerId: string, blockedId: string): Promise<boolean> {
    return (await this.collection.deleteOne({ _id: `${blockerId}:${blockedId}` })).deletedCount === 1;
  }

  /** True when either user blocked the other. */
  /** Of `candidates`, those who blocked `blockedId` (one read). */
  async blockersAmong(blockedId: string, candidates: string[]): Promise<Set<string>> {
    if (candidates.length === 0) return new Set();
    const rows = await this.collection.find({ _id: { $in: candidates.map((blockerId) => `${blockerId}:${blockedId}`) } }, { projection: { blockerId: 1 } }).toArray();
    return new Set(rows.map((row) => row.blockerId));
  }

  async eitherBlocked(a: string, b: string): Promise<boolean> {
    return (await this.collection.countDocuments({ _id: { $in: [`${a}:${b}`, `${b}:${a}`] } }, { limit: 1 })) > 0;
  }

  async pageForBlocker(blockerId: string, skip: number, limit: number): Promise<{ items: BlockDoc[]; total: number }> {
    const [items, total] = await Promise.all([
      this.collection.find({ blockerId }).sort({ createdAt: -1, _id: -1 }).skip(skip).limit(limit).toArray(),
      this.collection.countDocuments({ blockerId }),
    ]);
    return { items, total };
  }

  async isBlocked(blockerId: string, blockedId: string): Promise<boolean> {
    return (await this.collection.countDocuments({ _id: `${blockerId}:${blockedId}` }, { limit: 1 })) === 1;
  }

  /** The blocks a user made removed (their account was deleted); others' blocks of them stay. */
  async removeByBlocker(blockerId: string): Promise<void> {
    await this.collection.deleteMany({ blockerId });
  }
}
