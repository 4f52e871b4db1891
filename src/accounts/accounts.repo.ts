import type { Collection, Db } from 'mongodb';

/** The steps of erasing a deleted account, in the order they run (src/accounts/accounts.service.ts). */
export const ERASE_STEPS = ['account', 'devices', 'contacts', 'rooms', 'e2ee', 'apps', 'messages', 'profile'] as const;
export type EraseStep = (typeof ERASE_STEPS)[number];

/** One account deletion (`_id` the user's id): what was asked, and the steps of its erasure done so far. */
export interface AccountDeletionDoc {
  _id: string;
  state: 'ERASING' | 'ERASED';
  eraseMessages: boolean;
  done: EraseStep[];
  requestedAt: Date;
  updatedAt: Date;
}

export class AccountDeletionsRepo {
  private readonly collection: Collection<AccountDeletionDoc>;

  constructor(db: Db) {
    this.collection = db.collection<AccountDeletionDoc>('account_deletions');
  }

  async ensureIndexes(): Promise<void> {
    await this.collection.createIndexes([{ key: { state: 1, updatedAt: 1 }, name: 'by_state' }]);
  }

  /** Records the deletion once; a repeat leaves the first (its choice of erasing messages included). */
  async begin(userId: string, eraseMessages: boolean, at: Date): Promise<void> {
    await this.collection.updateOne({ _id: userId }, { $setOnInsert: { state: 'ERASING', eraseMessages, done: [], requestedAt: at, updatedAt: at } }, { upsert: true });
  }

  find(userId: string): Promise<AccountDeletionDoc | null> {
    return this.collection.findOne({ _id: userId });
  }

  async stepDone(userId: string, step: EraseStep, at: Date): Promise<void> {
    await this.collection.updateOne({ _id: userId }, { $addToSet: { done: step }, $set: { updatedAt: at } });
  }

  async finish(userId: string, at: Date): Promise<void> {
    await this.collection.updateOne({ _id: userId, state: 'ERASING' }, { $set: { state: 'ERASED', updatedAt: at } });
  }

  /** Deletions still erasing that nobody moved on since `before` (a process died midway). */
  stalled(before: Date, limit: number): Promise<AccountDeletionDoc[]> {
    return this.collection.find({ state: 'ERASING', updatedAt: { $lt: before } }).limit(limit).toArray();
  }
}
