import type { Clock } from '../platform/clock.js';
import type { Logger } from '../platform/logger.js';
import { systemAccountId, type Ledger } from './ledger.js';
import type { AccountBalances, BooksCheckDoc, LedgerRepo } from './ledger.repo.js';
import { must } from '../platform/must.js';
import { formatAmount, fromStored, type Currency, CURRENCY_CODES } from './money.js';

export interface BooksReport {
  /** Entries a crash had left between steps, taken to their end by this run. */
  finished: number;
  /** Per currency: the sum of every account (zero when the books balance). */
  totals: Record<string, string>;
  /** Accounts whose balance differs from the sum of their finished entries. */
  mismatchedAccounts: string[];
  /** Members' wallets below zero (never expected). */
  negativeWallets: string[];
  entriesChecked: number;
  /**
   * Per currency: what members and apps are owed (wallets, apps' balances, withdrawals on their way out) against what
   * the service's addresses hold on chain (the hot wallet and the deposit addresses). Null when the
   * chain did not answer.
   */
  chain: Record<string, { owed: string; onChain: string; covered: boolean }> | null;
  ok: boolean;
}

/** What the reconciler asks the chain: the service's addresses and their balances. */
export interface ChainHoldings {
  holdings(currency: Currency, depositAddresses: string[]): Promise<bigint>;
}

/**
 * Finishes what a crash interrupted and checks the books; it never changes a balance to make them
 * agree. Entries left PENDING or APPLIED for longer than `graceMs` are advanced (each step runs once,
 * so this is safe while the request that made them still runs). Then: the sum of every account per
 * currency is zero (double entry); no member's wallet is negative; and every account's balance is
 * what its entries that moved money come to. A mismatch is reported in the answer, a log line and a
 * metric, for a person to look at.
 */
export class Reconciler {
  constructor(private readonly deps: { repo: LedgerRepo; ledger: Ledger; chain: ChainHoldings; clock: Clock; logger: Logger; graceMs: number }) {}

  async run(): Promise<BooksReport> {
    const { repo, ledger, logger } = this.deps;
    const cutoff = new Date(this.deps.clock().getTime() - this.deps.graceMs);
    let finished = 0;
    for (const entry of await repo.unfinishedBefore(cutoff)) {
      await ledger.advance(entry);
      finished++;
    }

    // Marks of finished entries are strays (a finished entry has none): reverse them, once each.
    for (const account of await repo.accountsWithMarks()) {
      const finishedEntries = await repo.doneAmong(account.pending);
      for (const entry of finishedEntries) {
        const amount = fromStored(entry.amount);
        await ledger.reverseStray(entry._id, account._id, entry.debit === account._id ? amount : -amount);
      }
    }

    // The checks read accounts and entries one after another while entries go on: an entry finished
    // between two reads looks like a mismatch. What is wrong stays wrong, so the checks run again
    // (up to three times, a quarter second apart) and only what persists is reported.
    let books = await this.checkBooks();
    for (let attempt = 1; attempt < 3 && !books.balanced; attempt++) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      books = await this.checkBooks();
    }
    const { totals, mismatchedAccounts, negativeWallets, entriesChecked } = books;
    const chain = await this.chainCheck().catch((error: unknown) => {
      logger.warn({ err: error }, 'the chain did not answer the books check');
      return null;
    });

    const report: BooksReport = {
      finished,
      totals: Object.fromEntries([...totals].map(([currency, total]) => [currency, formatAmount(total, currency)])),
      mismatchedAccounts,
      negativeWallets,
      entriesChecked: entriesChecked / 2,
      chain,
      ok: [...totals.values()].every((total) => total === 0n) && mismatchedAccounts.length === 0 && negativeWallets.length === 0 && Object.values(chain ?? {}).every((c) => c.covered),
    };
    if (!report.ok) logger.error({ report }, 'wallet books do not balance, or the chain holds less than members are owed');
    else if (finished > 0) logger.warn({ finished }, 'finished ledger entries a crash had left between steps');
    await repo.saveCheck({
      at: this.deps.clock(),
      ok: report.ok,
      finished,
      unbalancedCurrencies: [...totals.values()].filter((total) => total !== 0n).length,
      mismatchedAccounts: mismatchedAccounts.length,
      negativeWallets: negativeWallets.length,
      uncoveredCurrencies: chain ? Object.values(chain).filter((c) => !c.covered).length : null,
    });
    return report;
  }

  /** The last check's outcome (what the metrics show); null before the first. */
  latest(): Promise<BooksCheckDoc | null> {
    return this.deps.repo.latestCheck();
  }

  /** One pass over the accounts and the entries: totals per currency, negative wallets, accounts off their entries. */
  private async checkBooks() {
    const { repo } = this.deps;
    const totals = new Map<Currency, bigint>(CURRENCY_CODES.map((currency) => [currency, 0n]));
    const read = new Map<string, AccountBalances>();
    const negativeWallets: string[] = [];
    for await (const account of repo.allBalances()) {
      totals.set(account.currency, (totals.get(account.currency) ?? 0n) + balanceOf(account));
      read.set(account._id, account);
      if ((account.kind === 'WALLET' || account.kind === 'APP') && fromStored(account.available) < 0n) negativeWallets.push(account._id);
    }
    // Every account against its entries, summed by the database.
    let entriesChecked = 0;
    const fromEntries = new Map<string, bigint>();
    for (const sum of await repo.sumsByAccount()) {
      fromEntries.set(sum.accountId, (sum.in ? fromStored(sum.in) : 0n) - (sum.out ? fromStored(sum.out) : 0n));
      entriesChecked += sum.count;
    }
    // An account with a mark has an entry in flight; the others should equal their entries.
    const off = [...read.values()].filter((account) => account.pending.length === 0 && (fromEntries.get(account._id) ?? 0n) !== balanceOf(account)).map(({ _id }) => _id);
    // An account read before an entry moved it, and summed after, looks off: those that changed since
    // they were read are in motion, not mismatched (a busy system account would otherwise be caught
    // every time). What is wrong is found the next time the account is still.
    const mismatchedAccounts = off.length === 0 ? [] : (await repo.balancesOf(off)).filter((now) => !movedSince(must(read.get(now._id), 'the account read first'), now)).map(({ _id }) => _id).sort();

    const balanced = [...totals.values()].every((total) => total === 0n) && mismatchedAccounts.length === 0 && negativeWallets.length === 0;
    return { totals, mismatchedAccounts, negativeWallets, entriesChecked, balanced };
  }

  private async chainCheck(): Promise<BooksReport['chain']> {
    const { repo } = this.deps;
    const result: NonNullable<BooksReport['chain']> = {};
    for (const currency of CURRENCY_CODES) {
      let owed = 0n;
      const addresses: string[] = [];
      for await (const account of repo.owedIn(currency, systemAccountId('outgoing', currency))) {
        owed += balanceOf(account);
        if (account.depositAddress) addresses.push(account.depositAddress);
      }
      const onChain = await this.deps.chain.holdings(currency, addresses);
      result[currency] = { owed: formatAmount(owed, currency), onChain: formatAmount(onChain, currency), covered: onChain >= owed };
    }
    return result;
  }
}

/** What an account holds: available and held. */
const balanceOf = (account: Pick<AccountBalances, 'available' | 'held'>): bigint => fromStored(account.available) + fromStored(account.held);

/** Whether an account changed between two reads (a step applied since, or one under way). */
function movedSince(first: AccountBalances, now: AccountBalances): boolean {
  const unchanged = fromStored(now.available) === fromStored(first.available) && fromStored(now.held) === fromStored(first.held) && now.updatedAt.getTime() === first.updatedAt.getTime();
  return now.pending.length > 0 || !unchanged;
}
