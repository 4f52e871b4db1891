import type { Collection, Db, Decimal128 } from 'mongodb';
import { isDuplicateKey } from '../platform/mongo.js';
import type { Currency } from './money.js';

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

/** One account's line of an entry, for its history: `_id` is `<accountId>:<journalId>`. */
export interface LineDoc {
  _id: string;
  accountId: string;
  journalId: string;
  kind: JournalKind;
  currency: Currency;
  /** Signed: negative leaves the account. */
  amount: Decimal128;
  counterparty: string;
  memo: JournalDoc['memo'];
  createdAt: Date;
}

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

export class LedgerRepo {
  readonly accounts: Collection<AccountDoc>;
  readonly journal: Collection<JournalDoc>;
  readonly lines: Collection<LineDoc>;
  readonly checks: Collection<BooksCheckDoc>;
  private readonly counters: Collection<{ _id: string; value: number }>;

  constructor(db: Db) {
    this.accounts = db.collection<AccountDoc>('ledger_accounts');
    this.journal = db.collection<JournalDoc>('ledger_journal');
    this.lines = db.collection<LineDoc>('ledger_lines');
    this.checks = db.collection<BooksCheckDoc>('ledger_books_checks');
    this.counters = db.collection('ledger_counters');
  }

  async ensureIndexes(): Promise<void> {
    await Promise.all([
      this.accounts.createIndexes([
        { key: { userId: 1, currency: 1, createdAt: 1 }, name: 'wallets_of_user' },
        { key: { depositAddress: 1 }, name: 'deposit_address', unique: true, sparse: true },
      ]),
      this.journal.createIndexes([{ key: { state: 1, updatedAt: 1 }, name: 'unfinished' }]),
      this.lines.createIndexes([{ key: { accountId: 1, createdAt: -1 }, name: 'history' }]),
    ]);
  }

  /** The next number of a named sequence (deposit address indexes). */
  async next(name: string): Promise<number> {
    const doc = await this.counters.findOneAndUpdate({ _id: name }, { $inc: { value: 1 } }, { upsert: true, returnDocument: 'after' });
    return doc!.value;
  }

  /** Creates an account unless it exists (system accounts are made on first use). */
  async ensureAccount(account: AccountDoc): Promise<void> {
    try {
      await this.accounts.insertOne(account);
    } catch (error) {
      if (!isDuplicateKey(error)) throw error;
    }
  }
}
