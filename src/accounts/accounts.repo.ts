import type { Collection, Db } from 'mongodb';

/** The steps of erasing a deleted account, in the order they run (src/accounts/accounts.service.ts). */
export const ERASE_STEPS = ['account', 'devices', 'contacts', 'rooms', 'e2ee', 'apps', 'messages', 'profile'] as const;
export type EraseStep = (typeof ERASE_STEPS)[number];

/** One account deletion (`_id` the user's id): what was asked, and the steps of its erasure done so far. */
export interface AccountDeletionDoc {
  _id: string;
  /** CLOSING: recorded, the wallets being closed (nothing erased yet); then ERASING, then ERASED. */
  state: 'CLOSING' | 'ERASING' | 'ERASED';
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

  /**
   * Records the deletion once, before anything of it is done (CLOSING: its wallets are about to close);
   * a repeat leaves the first (its choice of erasing messages included).
   */
  async begin(userId: string, eraseMessages: boolean, at: Date): Promise<void> {
    await this.collection.updateOne({ _id: userId }, { $setOnInsert: { state: 'CLOSING', eraseMessages, done: [], requestedAt: at, updatedAt: at } }, { upsert: true });
  }

  /** The wallets closed: the erasure may run. */
  async walletsClosed(userId: string, at: Date): Promise<void> {
    await this.collection.updateOne({ _id: userId, state: 'CLOSING' }, { $set: { state: 'ERASING', updatedAt: at } });
  }

  /** A deletion given up before its erasure began (money arrived; or a crash left it and money is there now). */
  async abandon(userId: string): Promise<void> {
    await this.collection.deleteOne({ _id: userId, state: 'CLOSING' });
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

  /** Deletions closing wallets or erasing that nobody moved on since `before` (a process died midway). */
  stalled(before: Date, limit: number): Promise<AccountDeletionDoc[]> {
    return this.collection.find({ state: { $in: ['CLOSING', 'ERASING'] }, updatedAt: { $lt: before } }).limit(limit).toArray();
  }
}

/** One data export (`account_exports`): asked for, built by the worker into an archive, deleted after 7 days. */
export interface AccountExportDoc {
  _id: string;
  userId: string;
  state: 'QUEUED' | 'READY' | 'FAILED';
  storageKey: string | null;
  size: number | null;
  createdAt: Date;
  readyAt: Date | null;
}

export class AccountExportsRepo {
  private readonly collection: Collection<AccountExportDoc>;

  constructor(db: Db) {
    this.collection = db.collection<AccountExportDoc>('account_exports');
  }

  async ensureIndexes(): Promise<void> {
    await this.collection.createIndexes([
      { key: { userId: 1, createdAt: -1 }, name: 'user_exports' },
      { key: { createdAt: 1 }, name: 'by_age' },
    ]);
  }

  async insert(doc: AccountExportDoc): Promise<void> {
    await this.collection.insertOne(doc);
  }

  /** The user's newest export. */
  latestOf(userId: string): Promise<AccountExportDoc | null> {
    return this.collection.find({ userId }).sort({ createdAt: -1 }).limit(1).next();
  }

  find(exportId: string): Promise<AccountExportDoc | null> {
    return this.collection.findOne({ _id: exportId });
  }

  async ready(exportId: string, storageKey: string, size: number, at: Date): Promise<boolean> {
    const done = await this.collection.updateOne({ _id: exportId, state: 'QUEUED' }, { $set: { state: 'READY', storageKey, size, readyAt: at } });
    return done.modifiedCount === 1;
  }

  async fail(exportId: string): Promise<void> {
    await this.collection.updateOne({ _id: exportId, state: 'QUEUED' }, { $set: { state: 'FAILED' } });
  }

  olderThan(before: Date, limit: number): Promise<AccountExportDoc[]> {
    return this.collection.find({ createdAt: { $lt: before } }).limit(limit).toArray();
  }

  ofUser(userId: string): Promise<AccountExportDoc[]> {
    return this.collection.find({ userId }).toArray();
  }

  async remove(exportId: string): Promise<void> {
    await this.collection.deleteOne({ _id: exportId });
  }
}
