import type { Collection, Db, Decimal128 } from 'mongodb';
import { isDuplicateKey } from '../platform/mongo.js';
import { fromStored, toStored, type Currency } from './money.js';
import { failedItems, GroupWriter, readsOf } from '../platform/group-writer.js';

/**
 * Requests whose reads go together at most: a request names up to 50 wallets and entries, and
 * mongo-java-server matches `$in` in time growing with the square of the list (8 requests: 400 ids
 * at most, a few milliseconds).
 */
const READ_GROUP_LIMIT = 8;

/** The ids a group of reads asks for, each once. */
const union = (sets: Set<string>[]): string[] => [...new Set(sets.flatMap((ids) => [...ids]))];

/**
 * One account of the double-entry ledger: a member's wallet, an app's balance (`app:<appId>:<currency>`:
 * what members paid it in chat), or a system account (`system:<name>:<currency>`: the chain, the
 * house's liquidity, fees). Balances change only by single-document conditional updates
 * that also mark the journal entry as applied here (`pending`), so each step runs once.
 */
export interface AccountDoc {
  _id: string;
  kind: 'WALLET' | 'APP' | 'SYSTEM';
  currency: Currency;
  /** The owner of a wallet; null for system accounts. */
  userId: string | null;
  name: string | null;
  /** What may be spent, in the currency's smallest unit. */
  available: Decimal128;
  /** Reserved for money on its way out (withdrawals between debit and chain confirmation). */
  held: Decimal128;
  /** Journal entries applied to this account whose entry is not finished yet. */
  pending: string[];
  /** System accounts that stand for the outside world (the chain) may go below zero; wallets never. */
  overdraft: boolean;
  /** Wallets: where deposits arrive (HD-derived at `depositIndex`). Absent on system accounts, so the sparse unique index leaves them out. */
  depositIndex?: number;
  depositAddress?: string;
  /**
   * Set when its owner deleted their account (the wallet was empty and idle then): nothing is
   * credited to it any more (the ledger refuses such an entry and gives the debit back), and it is
   * nobody's wallet for a transfer. Its entries stay in the journal.
   */
  closedAt?: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

export type JournalKind = 'TRANSFER' | 'DEPOSIT' | 'WITHDRAWAL' | 'SWAP' | 'PAYMENT' | 'ADJUSTMENT';
export type JournalState = 'PENDING' | 'APPLIED' | 'DONE' | 'FAILED';

/** A journal entry: `amount` moves from `debit` to `credit`. `_id` is the operation's unique key. */
export interface JournalDoc {
  _id: string;
  kind: JournalKind;
  currency: Currency;
  amount: Decimal128;
  debit: string;
  credit: string;
  state: JournalState;
  /** The fields the entry was asked with: a repeat of its key with other fields is refused. */
  fingerprint: string;
  /** Who asked and what for, as the history shows it. */
  memo: { userId?: string; requestId?: string; note?: string | null; toUserId?: string; fromUserId?: string };
  failure: string | null;
  createdAt: Date;
  updatedAt: Date;
}

/** The entries that have moved money: an account's history, and what the books check sums. */
export const MOVED: JournalState[] = ['APPLIED', 'DONE'];

/** Whether the entry has moved money (both its debit and its credit are applied; nothing undoes that). */
export const hasMoved = (entry: Pick<JournalDoc, 'state'>): boolean => MOVED.includes(entry.state);

/** What the books check reads of an account. */
export type AccountBalances = Pick<AccountDoc, '_id' | 'currency' | 'available' | 'held' | 'kind' | 'pending' | 'updatedAt'>;
const BALANCES = { currency: 1, available: 1, held: 1, kind: 1, pending: 1, updatedAt: 1 } as const;

/** The outcome of the reconciler's last books check (one document), for the metrics and for operators. */
export interface BooksCheckDoc {
  _id: 'latest';
  at: Date;
  ok: boolean;
  /** Entries a crash had left between steps, finished by that run. */
  finished: number;
  unbalancedCurrencies: number;
  mismatchedAccounts: number;
  negativeWallets: number;
  /** Currencies in which the chain holds less than members are owed; null when the chain did not answer. */
  uncoveredCurrencies: number | null;
}

/**
 * The ledger's collections (`ledger_accounts`, `ledger_journal`, `ledger_books_checks`,
 * `ledger_counters`) behind named steps: every balance change is one conditional update that also
 * sets or takes the entry's mark on the account, so a repeated step changes nothing. An account's
 * history is its entries that have moved money, read from the journal by either side (as TigerBeetle
 * reads an account's transfers): no separate lines to write. (`ledger_lines`, written before
 * 2026-11, is no longer read.)
 */
export class LedgerRepo {
  private readonly accounts: Collection<AccountDoc>;
  private readonly journal: Collection<JournalDoc>;
  private readonly checks: Collection<BooksCheckDoc>;
  private readonly counters: Collection<{ _id: string; value: number }>;

  constructor(db: Db) {
    this.accounts = db.collection<AccountDoc>('ledger_accounts');
    this.journal = db.collection<JournalDoc>('ledger_journal');
    this.checks = db.collection<BooksCheckDoc>('ledger_books_checks');
    this.counters = db.collection('ledger_counters');
  }

  async ensureIndexes(): Promise<void> {
    await Promise.all([
      this.accounts.createIndexes([
        { key: { userId: 1, currency: 1, createdAt: 1 }, name: 'wallets_of_user' },
        { key: { depositAddress: 1 }, name: 'deposit_address', unique: true, sparse: true },
      ]),
      this.journal.createIndexes([
        { key: { state: 1, updatedAt: 1 }, name: 'unfinished' },
        { key: { debit: 1, createdAt: -1, _id: -1 }, name: 'history_debit' },
        { key: { credit: 1, createdAt: -1, _id: -1 }, name: 'history_credit' },
      ]),
    ]);
  }

  /**
   * The next number of a named sequence (deposit address indexes), from 1. The number is read from the
   * document as it was before the increment: mongo-java-server answers `returnDocument: 'after'` with a
   * read made after its lock, so two callers at once could both get the later one (measured; the
   * room timeline's numbers read `before` too).
   */
  async next(name: string): Promise<number> {
    const before = await this.counters.findOneAndUpdate({ _id: name }, { $inc: { value: 1 } }, { upsert: true, returnDocument: 'before' });
    return (before?.value ?? 0) + 1;
  }

  // Accounts.

  /** Creates an account unless it exists (system accounts are made on first use). */
  async ensureAccount(account: AccountDoc): Promise<void> {
    try {
      await this.accounts.insertOne(account);
    } catch (error) {
      if (!isDuplicateKey(error)) throw error;
    }
  }

  /** Inserts a new wallet; false when its deposit address is taken (its `_id` is new). */
  async insertWallet(wallet: AccountDoc): Promise<boolean> {
    try {
      await this.accounts.insertOne(wallet);
      return true;
    } catch (error) {
      if (isDuplicateKey(error)) return false;
      throw error;
    }
  }

  findAccount(accountId: string): Promise<AccountDoc | null> {
    return this.accounts.findOne({ _id: accountId });
  }

  /** What an account has available (the apps area's read of an app's balance). */
  availableOf(accountId: string): Promise<Pick<AccountDoc, '_id' | 'available'> | null> {
    return this.accounts.findOne({ _id: accountId }, { projection: { available: 1 } });
  }

  countWalletsOf(userId: string): Promise<number> {
    return this.accounts.countDocuments({ userId, kind: 'WALLET' });
  }

  /** A member's wallets, oldest first. */
  walletsOf(userId: string): Promise<AccountDoc[]> {
    return this.accounts.find({ userId, kind: 'WALLET' }).sort({ createdAt: 1, _id: 1 }).toArray();
  }

  /** A member's oldest open wallet of a currency. */
  firstWalletOf(userId: string, currency: Currency): Promise<AccountDoc | null> {
    return this.accounts.find({ userId, kind: 'WALLET', currency, closedAt: null }).sort({ createdAt: 1, _id: 1 }).limit(1).next();
  }

  /** Whether an account was closed (its owner deleted their account). */
  async isClosed(accountId: string): Promise<boolean> {
    return (await this.accounts.countDocuments({ _id: accountId, closedAt: { $ne: null } }, { limit: 1 })) > 0;
  }

  /**
   * Closes a wallet as it was read: only if nothing moved since (its balance and `updatedAt` as read),
   * so money that arrived in between keeps it open. True when it closed.
   */
  async closeIfUnchanged(wallet: Pick<AccountDoc, '_id' | 'available' | 'updatedAt'>, at: Date): Promise<boolean> {
    const closed = await this.accounts.updateOne({ _id: wallet._id, available: wallet.available, updatedAt: wallet.updatedAt, closedAt: null }, { $set: { closedAt: at } });
    return closed.modifiedCount === 1;
  }

  /** Opens again wallets closed by a deletion that was then refused. */
  async reopenWalletsOf(userId: string): Promise<void> {
    await this.accounts.updateMany({ userId, kind: 'WALLET' }, { $set: { closedAt: null } });
  }

  rename(accountId: string, name: string, at: Date): Promise<AccountDoc | null> {
    return this.accounts.findOneAndUpdate({ _id: accountId }, { $set: { name, updatedAt: at } }, { returnDocument: 'after' });
  }

  /**
   * The accounts with these ids and every wallet of these members, in one read (shared with the
   * requests that ask while another such read is under way: GroupWriter).
   */
  walletsOrOwnersAmong(accountIds: string[], userIds: string[]): Promise<AccountDoc[]> {
    return this.partyReads.add({ accountIds: new Set(accountIds), userIds: new Set(userIds) });
  }

  private readonly partyReads = new GroupWriter(
    readsOf<{ accountIds: Set<string>; userIds: Set<string> }, AccountDoc>(
      (questions) =>
        this.accounts
          .find({ $or: [{ _id: { $in: union(questions.map((q) => q.accountIds)) } }, { userId: { $in: union(questions.map((q) => q.userIds)) }, kind: 'WALLET' }] })
          .toArray(),
      (account, { accountIds, userIds }) => accountIds.has(account._id) || (account.kind === 'WALLET' && account.userId !== null && userIds.has(account.userId)),
    ),
    READ_GROUP_LIMIT,
  );

  /** The accounts whose deposit address is one of `addresses`. */
  byDepositAddresses(addresses: string[]): Promise<AccountDoc[]> {
    return this.accounts.find({ depositAddress: { $in: addresses } }).toArray();
  }

  /**
   * The entry's debit, once (its mark), and only from what is available unless the account may
   * overdraw; true when this call applied it.
   */
  async applyDebit(entry: JournalDoc, at: Date): Promise<boolean> {
    const applied = await this.accounts.updateOne(
      { _id: entry.debit, currency: entry.currency, pending: { $ne: entry._id }, $or: [{ available: { $gte: entry.amount } }, { overdraft: true }] },
      { $inc: { available: toStored(-fromStored(entry.amount)) }, $push: { pending: entry._id }, $set: { updatedAt: at } },
    );
    return applied.modifiedCount === 1;
  }

  /** The entry's credit, once (its mark); true when this call applied it. */
  async applyCredit(entry: JournalDoc, at: Date): Promise<boolean> {
    const applied = await this.accounts.updateOne(
      { _id: entry.credit, currency: entry.currency, pending: { $ne: entry._id }, closedAt: null },
      { $inc: { available: entry.amount }, $push: { pending: entry._id }, $set: { updatedAt: at } },
    );
    return applied.modifiedCount === 1;
  }

  /**
   * Many entries' debits in one ordered write, each as `applyDebit` (so two debits of one account are
   * decided in the entries' order); how many applied. When fewer than all did, `marksOn` tells which.
   */
  async applyDebits(entries: JournalDoc[], at: Date): Promise<number> {
    if (entries.length === 0) return 0;
    const result = await this.accounts.bulkWrite(
      entries.map((entry) => ({
        updateOne: {
          filter: { _id: entry.debit, currency: entry.currency, pending: { $ne: entry._id }, $or: [{ available: { $gte: entry.amount } }, { overdraft: true }] },
          update: { $inc: { available: toStored(-fromStored(entry.amount)) }, $push: { pending: entry._id }, $set: { updatedAt: at } },
        },
      })),
      { ordered: true },
    );
    return result.modifiedCount;
  }

  /** Many entries' credits in one ordered write, each as `applyCredit`; how many applied. */
  async applyCredits(entries: JournalDoc[], at: Date): Promise<number> {
    if (entries.length === 0) return 0;
    const result = await this.accounts.bulkWrite(
      entries.map((entry) => ({
        updateOne: {
          filter: { _id: entry.credit, currency: entry.currency, pending: { $ne: entry._id }, closedAt: null },
          update: { $inc: { available: entry.amount }, $push: { pending: entry._id }, $set: { updatedAt: at } },
        },
      })),
      { ordered: true },
    );
    return result.modifiedCount;
  }

  /** The marks the accounts carry, by account. */
  async marksOn(accountIds: string[]): Promise<Map<string, Set<string>>> {
    const accounts = await this.accounts.find({ _id: { $in: [...new Set(accountIds)] } }, { projection: { pending: 1 } }).toArray();
    return new Map(accounts.map((account) => [account._id, new Set(account.pending)]));
  }

  /** Whether the account carries the entry's mark (the step was applied, by whichever call). */
  async hasMark(accountId: string, entryId: string): Promise<boolean> {
    return (await this.accounts.countDocuments({ _id: accountId, pending: entryId })) === 1;
  }

  /** Takes a finished entry's marks off its accounts. */
  async clearMarks(entry: Pick<JournalDoc, '_id' | 'debit' | 'credit'>): Promise<void> {
    await this.accounts.updateMany({ _id: { $in: [entry.debit, entry.credit] } }, { $pull: { pending: entry._id } });
  }

  /** Takes the marks of finished entries off their accounts, in one write. */
  async clearMarksOf(entries: Pick<JournalDoc, '_id' | 'debit' | 'credit'>[]): Promise<void> {
    if (entries.length === 0) return;
    const accountIds = [...new Set(entries.flatMap((entry) => [entry.debit, entry.credit]))];
    await this.accounts.updateMany({ _id: { $in: accountIds } }, { $pull: { pending: { $in: entries.map((entry) => entry._id) } } });
  }

  /** Takes back a step's amount with its mark (a stray application); true when this call did. */
  async reverseMarked(accountId: string, entryId: string, applied: bigint): Promise<boolean> {
    const reversed = await this.accounts.updateOne({ _id: accountId, pending: entryId }, { $inc: { available: toStored(applied) }, $pull: { pending: entryId } });
    return reversed.modifiedCount === 1;
  }

  /** Accounts with marks of entries in progress. */
  accountsWithMarks(): Promise<Pick<AccountDoc, '_id' | 'pending'>[]> {
    return this.accounts.find({ 'pending.0': { $exists: true } }, { projection: { pending: 1 } }).toArray();
  }

  /** Every account's balances, one at a time (the books check). */
  allBalances(): AsyncIterable<AccountBalances> {
    return this.accounts.find({}, { projection: BALANCES });
  }

  /** These accounts' balances as they stand now (the books check reads again those it found off). */
  balancesOf(accountIds: string[]): Promise<AccountBalances[]> {
    return this.accounts.find({ _id: { $in: accountIds } }, { projection: BALANCES }).toArray();
  }

  /** What members and apps are owed in a currency (their accounts and the outgoing account), one at a time. */
  owedIn(currency: Currency, outgoingAccountId: string): AsyncIterable<Pick<AccountDoc, '_id' | 'available' | 'held' | 'depositAddress'>> {
    return this.accounts.find({ currency, $or: [{ kind: 'WALLET' }, { kind: 'APP' }, { _id: outgoingAccountId }] }, { projection: { available: 1, held: 1, depositAddress: 1 } });
  }

  // The journal.

  /**
   * Many entries in one write; the indexes of those whose id was taken (their duplicate-key errors).
   * Any other failure throws.
   */
  async insertEntries(entries: JournalDoc[]): Promise<Set<number>> {
    try {
      await this.journal.insertMany(entries, { ordered: false });
      return new Set();
    } catch (error) {
      const failed = failedItems(error);
      if (!failed || ![...failed.values()].every(isDuplicateKey)) throw error;
      return new Set(failed.keys());
    }
  }

  findEntry(entryId: string): Promise<JournalDoc | null> {
    return this.journal.findOne({ _id: entryId });
  }

  async entryExists(entryId: string): Promise<boolean> {
    return (await this.journal.countDocuments({ _id: entryId })) > 0;
  }

  /** Whether the entry is DONE or FAILED: finished either way, so no account may carry its mark. */
  async isFinished(entryId: string): Promise<boolean> {
    return (await this.journal.countDocuments({ _id: entryId, state: { $in: ['DONE', 'FAILED'] } })) > 0;
  }

  /** Moves an entry from one of `from` to `to` (with `extra`); null when it was in none of them. */
  setState(entryId: string, from: JournalState[], to: JournalState, at: Date, extra: Partial<Pick<JournalDoc, 'failure'>> = {}): Promise<JournalDoc | null> {
    return this.journal.findOneAndUpdate({ _id: entryId, state: { $in: from } }, { $set: { state: to, updatedAt: at, ...extra } }, { returnDocument: 'after' });
  }

  /** Moves many entries from one of `from` to `to` (with `extra`) in one write; how many moved. */
  async setStates(entryIds: string[], from: JournalState[], to: JournalState, at: Date, extra: Partial<Pick<JournalDoc, 'failure'>> = {}): Promise<number> {
    if (entryIds.length === 0) return 0;
    const moved = await this.journal.updateMany({ _id: { $in: entryIds }, state: { $in: from } }, { $set: { state: to, updatedAt: at, ...extra } });
    return moved.modifiedCount;
  }

  /** The entries under these ids (a request's items looked up at once; shared like `walletsOrOwnersAmong`). */
  findEntries(entryIds: string[]): Promise<JournalDoc[]> {
    return this.entryReads.add(new Set(entryIds));
  }

  private readonly entryReads = new GroupWriter(
    readsOf<Set<string>, JournalDoc>(
      (questions) => this.journal.find({ _id: { $in: union(questions) } }).toArray(),
      (entry, ids) => ids.has(entry._id),
    ),
    READ_GROUP_LIMIT,
  );

  /** Entries still between steps that were last touched before `before` (the reconciler finishes them). */
  unfinishedBefore(before: Date): Promise<JournalDoc[]> {
    return this.journal.find({ state: { $in: ['PENDING', 'APPLIED'] }, updatedAt: { $lt: before } }).toArray();
  }

  /** Which of the entries are finished. */
  doneAmong(entryIds: string[]): Promise<JournalDoc[]> {
    return this.journal.find({ _id: { $in: entryIds }, state: 'DONE' }).toArray();
  }

  /** One page of an account's history (its entries that moved money, either side), newest first, and how many there are. */
  async pageOfHistory(accountId: string, pageSize: number, currentPage: number): Promise<{ items: JournalDoc[]; total: number }> {
    const filter = { $or: [{ debit: accountId }, { credit: accountId }], state: { $in: MOVED } };
    const [items, total] = await Promise.all([
      this.journal.find(filter).sort({ createdAt: -1, _id: -1 }).skip(currentPage * pageSize).limit(pageSize).toArray(),
      this.journal.countDocuments(filter),
    ]);
    return { items, total };
  }

  /** What every account's entries that moved money come to, summed by the database: by account, what left it, what came in, and how many entries. */
  async sumsByAccount(): Promise<{ accountId: string; out: Decimal128 | null; in: Decimal128 | null; count: number }[]> {
    const bySide = (side: 'debit' | 'credit') =>
      this.journal.aggregate<{ _id: string; total: Decimal128; count: number }>([{ $match: { state: { $in: MOVED } } }, { $group: { _id: `$${side}`, total: { $sum: '$amount' }, count: { $sum: 1 } } }]).toArray();
    const [debits, credits] = await Promise.all([bySide('debit'), bySide('credit')]);
    const sums = new Map<string, { accountId: string; out: Decimal128 | null; in: Decimal128 | null; count: number }>();
    const of = (accountId: string) => {
      let sum = sums.get(accountId);
      if (!sum) sums.set(accountId, (sum = { accountId, out: null, in: null, count: 0 }));
      return sum;
    };
    for (const { _id, total, count } of debits) Object.assign(of(_id), { out: total, count: of(_id).count + count });
    for (const { _id, total, count } of credits) Object.assign(of(_id), { in: total, count: of(_id).count + count });
    return [...sums.values()];
  }

  // Books checks.

  latestCheck(): Promise<BooksCheckDoc | null> {
    return this.checks.findOne({ _id: 'latest' });
  }

  async saveCheck(check: Omit<BooksCheckDoc, '_id'>): Promise<void> {
    await this.checks.replaceOne({ _id: 'latest' }, check, { upsert: true });
  }
}
