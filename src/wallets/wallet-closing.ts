import type { AccountDoc, LedgerRepo } from './ledger.repo.js';
import { formatAmount, fromStored } from './money.js';
import type { SwapsRepo } from './swaps.repo.js';
import type { WithdrawalsRepo } from './withdrawals.repo.js';
import type { Clock } from '../platform/clock.js';

/**
 * A member's wallets when they delete their account (docs/clients/people.md, "Deleting an account"):
 * the deletion waits until no money is in them or on its way, then closes them. Nothing is credited
 * to a closed wallet again (the ledger refuses and gives the debit back); the journal keeps their
 * entries.
 */
export class WalletClosing {
  constructor(private readonly deps: { repo: LedgerRepo; withdrawals: WithdrawalsRepo; swaps: SwapsRepo; clock: Clock }) {}

  /** What stops the deletion, one line each: wallets holding or moving money, unfinished withdrawals and swaps. Empty when nothing does. */
  async blockers(userId: string): Promise<string[]> {
    return (await this.read(userId)).blockers;
  }

  /** The member's open wallets as read now, and what of them (and of their withdrawals and swaps) stops the deletion. */
  private async read(userId: string): Promise<{ wallets: AccountDoc[]; blockers: string[] }> {
    const [all, withdrawals, swaps] = await Promise.all([this.deps.repo.walletsOf(userId), this.deps.withdrawals.unfinishedOf(userId), this.deps.swaps.unfinishedOf(userId)]);
    const wallets = all.filter((wallet) => !wallet.closedAt);
    const blockers: string[] = [];
    for (const wallet of wallets) {
      const available = fromStored(wallet.available);
      const held = fromStored(wallet.held);
      if (available !== 0n || held !== 0n) blockers.push(`wallet ${wallet._id} holds ${formatAmount(available + held, wallet.currency)} ${wallet.currency}`);
      else if (wallet.pending.length > 0) blockers.push(`wallet ${wallet._id} has money on its way`);
    }
    for (const id of withdrawals) blockers.push(`withdrawal ${id} is not finished`);
    for (const id of swaps) blockers.push(`swap ${id} is not finished`);
    return { wallets, blockers };
  }

  /**
   * Closes every wallet of the member, each only if nothing moved since the read that found it empty
   * (one read serves the check and the close, so money that arrives after it keeps the wallet open).
   * When one could not close, every one is opened again and what stops the deletion is answered;
   * empty when all closed.
   */
  async close(userId: string): Promise<string[]> {
    const { wallets, blockers } = await this.read(userId);
    if (blockers.length > 0) return blockers;
    const at = this.deps.clock();
    const closed = await Promise.all(wallets.map((wallet) => this.deps.repo.closeIfUnchanged(wallet, at)));
    if (closed.every(Boolean)) return [];
    await this.deps.repo.reopenWalletsOf(userId);
    const now = await this.blockers(userId);
    return now.length > 0 ? now : ['a wallet changed while it was being closed; try again'];
  }

  /** A deletion given up (a crash left it before its erasure began): the member's wallets take money again. */
  async reopen(userId: string): Promise<void> {
    await this.deps.repo.reopenWalletsOf(userId);
  }
}
