import type { Clock } from '../platform/clock.js';
import { isDuplicateKey } from '../platform/mongo.js';
import type { Logger } from '../platform/logger.js';
import { fromStored, toStored, type Currency } from './money.js';
import type { AccountDoc, JournalDoc, JournalKind, LedgerRepo } from './ledger.repo.js';
import { WalletsErrors } from './wallets.errors.js';
import { must } from '../platform/must.js';

export interface EntryRequest {
  /** The operation's unique key: the same key posts once, whatever happens. */
  id: string;
  kind: JournalKind;
  currency: Currency;
  amount: bigint;
  debit: string;
  credit: string;
  fingerprint: string;
  memo: JournalDoc['memo'];
}

/** An entry the debited account could not pay for: recorded as FAILED, nothing moved. */
export class InsufficientFunds extends Error {}

/**
 * How long an entry may stay between steps before the reconciler finishes it (it takes entries whose
 * `updatedAt` is older). A step applied within a third of this after the entry was written or last
 * moved cannot meet an entry the reconciler finished (allowing clocks 20 s apart), so only a slower
 * step looks whether it did.
 */
export const LEDGER_GRACE_MS = 30_000;

/** System accounts: the chain (the world outside), money on its way out, the house's liquidity, fees earned. */
export type SystemAccount = 'chain' | 'outgoing' | 'house' | 'fees';
export const systemAccountId = (name: SystemAccount, currency: Currency) => `system:${name}:${currency}`;

/**
 * The double-entry ledger. An entry is written first (its `_id` the operation's key, so it exists
 * once), then applied in steps that each change one document and can each be repeated: the debit
 * (conditional on the available balance, unless the account stands for the outside world), the
 * credit, the history lines, and the clearing of the in-flight marks. A crash between steps leaves
 * the entry PENDING or APPLIED, and `advance` (the reconciler's) finishes it: no step runs twice,
 * none is lost, and money is never created or destroyed.
 */
export class Ledger {
  constructor(
    private readonly deps: {
      repo: LedgerRepo;
      clock: Clock;
      logger: Logger;
    },
  ) {}

  /** Posts an entry, or returns the entry already posted under its key. Throws InsufficientFunds when refused. */
  async post(request: EntryRequest): Promise<JournalDoc> {
    const { repo } = this.deps;
    const now = this.deps.clock();
    const entry: JournalDoc = {
      _id: request.id,
      kind: request.kind,
      currency: request.currency,
      amount: toStored(request.amount),
      debit: request.debit,
      credit: request.credit,
      state: 'PENDING',
      fingerprint: request.fingerprint,
      memo: request.memo,
      failure: null,
      createdAt: now,
      updatedAt: now,
    };
    try {
      await repo.insertEntry(entry);
    } catch (error) {
      if (!isDuplicateKey(error)) throw error;
      // Another request made it: only the one that wrote an entry (or, later, the reconciler) applies
      // it; a repeat waits for its end.
      const existing = must(await repo.findEntry(request.id), 'the entry under this key');
      if (existing.fingerprint !== request.fingerprint) throw WalletsErrors.REQUEST_ID_REUSED();
      return this.outcome(await this.awaitEnd(existing));
    }
    return this.outcome(await this.advance(entry));
  }

  private outcome(entry: JournalDoc): JournalDoc {
    if (entry.state === 'FAILED') throw new InsufficientFunds(entry.failure ?? 'insufficient funds');
    return entry;
  }

  entry(id: string): Promise<JournalDoc | null> {
    return this.deps.repo.findEntry(id);
  }

  /**
   * Tries an entry that failed for want of funds once more (a pending swap the house can now fill).
   * Only the caller whose reset took effect applies it; null when it was not FAILED.
   */
  async retryFailed(id: string): Promise<JournalDoc | null> {
    const reset = await this.deps.repo.setState(id, ['FAILED'], 'PENDING', this.deps.clock(), { failure: null });
    return reset ? this.advance(reset) : null;
  }

  /** The entry once it is DONE or FAILED, or as it stands after `ms` (still being applied). */
  async awaitEnd(entry: JournalDoc, ms = 10_000): Promise<JournalDoc> {
    const deadline = Date.now() + ms;
    let current = entry;
    while ((current.state === 'PENDING' || current.state === 'APPLIED') && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      current = (await this.deps.repo.findEntry(entry._id)) ?? current;
    }
    return current;
  }

  /** Takes an entry as far as it goes: DONE, or FAILED when its debit could not be paid. Each step may repeat. */
  async advance(entry: JournalDoc): Promise<JournalDoc> {
    const { repo } = this.deps;
    let current = entry;
    if (current.state === 'PENDING') {
      if (!(await this.applyDebit(current))) {
        const failed = await repo.setState(current._id, ['PENDING'], 'FAILED', this.deps.clock(), { failure: 'INSUFFICIENT_FUNDS' });
        return failed ?? must(await repo.findEntry(current._id), 'the entry being applied');
      }
      await this.applyCredit(current);
      current = (await repo.setState(current._id, ['PENDING', 'APPLIED'], 'APPLIED', this.deps.clock())) ?? current;
    }
    if (current.state === 'APPLIED') {
      await this.writeLines(current);
      await repo.clearMarks(current);
      current = (await repo.setState(current._id, ['APPLIED'], 'DONE', this.deps.clock())) ?? must(await repo.findEntry(current._id), 'the entry being applied');
    }
    return current;
  }

  /** The debit: once (the entry's mark), and only from what is available unless the account may overdraw. */
  private async applyDebit(entry: JournalDoc): Promise<boolean> {
    const { repo } = this.deps;
    if (await repo.applyDebit(entry, this.deps.clock())) return !(await this.undoIfFinished(entry, entry.debit, fromStored(entry.amount)));
    // Not applied now: applied before (a repeat), or refused.
    return repo.hasMark(entry.debit, entry._id);
  }

  private async applyCredit(entry: JournalDoc): Promise<void> {
    const { repo } = this.deps;
    if (await repo.applyCredit(entry, this.deps.clock())) {
      await this.undoIfFinished(entry, entry.credit, -fromStored(entry.amount));
      return;
    }
    if (!(await repo.hasMark(entry.credit, entry._id))) {
      // The credited account is gone or of another currency: the entry stays PENDING and the reconciler reports it.
      throw new Error(`ledger: cannot credit ${entry.credit} for ${entry._id}`);
    }
  }

  /**
   * A step applied by a process that stalled past the reconciler's grace while the reconciler finished
   * the entry: its mark sits on an entry that is DONE (a finished entry has no marks left). Such a
   * step is reversed, once (the reversal takes the mark away with it). True when it was.
   */
  private async undoIfFinished(entry: JournalDoc, accountId: string, applied: bigint): Promise<boolean> {
    if (this.deps.clock().getTime() - entry.updatedAt.getTime() < LEDGER_GRACE_MS / 3) return false;
    if (!(await this.deps.repo.isDone(entry._id))) return false;
    await this.reverseStray(entry._id, accountId, applied);
    return true;
  }

  /** Takes back a stray application of an entry to an account (see undoIfFinished): conditional on its mark. */
  async reverseStray(entryId: string, accountId: string, applied: bigint): Promise<void> {
    if (await this.deps.repo.reverseMarked(accountId, entryId, applied)) this.deps.logger.warn({ entryId, accountId }, 'reversed a ledger step applied after its entry was finished');
  }

  private async writeLines(entry: JournalDoc): Promise<void> {
    const amount = fromStored(entry.amount);
    const line = (accountId: string, signed: bigint, counterparty: string) => ({
      _id: `${accountId}:${entry._id}`,
      accountId,
      journalId: entry._id,
      kind: entry.kind,
      currency: entry.currency,
      amount: toStored(signed),
      counterparty,
      memo: entry.memo,
      createdAt: entry.createdAt,
    });
    // Both in one call; written before (a repeated step), they are duplicates, and that is fine.
    await this.deps.repo.insertLines([line(entry.debit, -amount, entry.credit), line(entry.credit, amount, entry.debit)]);
  }

  /** An app's balance in a currency (what members paid it), made on first use; never below zero. */
  async ensureAppAccount(appId: string, currency: Currency): Promise<string> {
    const id = `app:${appId}:${currency}`;
    const now = this.deps.clock();
    await this.deps.repo.ensureAccount({ _id: id, kind: 'APP', currency, userId: null, name: appId, available: toStored(0n), held: toStored(0n), pending: [], overdraft: false, createdAt: now, updatedAt: now });
    return id;
  }

  /** Makes a system account on first use. */
  async ensureSystemAccount(name: SystemAccount, currency: Currency): Promise<string> {
    const id = systemAccountId(name, currency);
    const now = this.deps.clock();
    const account: AccountDoc = {
      _id: id,
      kind: 'SYSTEM',
      currency,
      userId: null,
      name,
      available: toStored(0n),
      held: toStored(0n),
      pending: [],
      overdraft: name === 'chain',
      createdAt: now,
      updatedAt: now,
    };
    await this.deps.repo.ensureAccount(account);
    return id;
  }
}
