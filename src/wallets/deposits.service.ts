import type { Clock } from '../platform/clock.js';
import type { DeviceEvents } from '../platform/device-events.js';
import type { Logger } from '../platform/logger.js';
import type { EvmChain } from './chain.js';
import type { Ledger } from './ledger.js';
import type { LedgerRepo } from './ledger.repo.js';
import type { ChainCursorsRepo } from './chain-cursors.repo.js';
import { formatAmount } from './money.js';
import { must } from '../platform/must.js';

/** Blocks read per run at most, so one run stays short after a long pause. */
const BLOCKS_PER_RUN = 200;

/**
 * Credits payments into wallets' deposit addresses once they are `confirmations` blocks deep. The
 * ledger entry's id is the payment's place on chain (`deposit:<txHash>:<logIndex>`, -1 for ETH), so a
 * block read twice (a watcher that restarted before saving how far it got) credits nothing twice. The
 * cursor starts at the chain's head the first time (payments from before the service existed are not
 * read). A payment in the wrong currency for its address (ETH to a USDT wallet's address) is logged
 * and left on chain for a person to return. Money stays on the deposit addresses: sweeping it into the
 * hot wallet is designed (docs/clients/wallets.md) and not built.
 */
export class DepositsService {
  constructor(
    private readonly cursors: ChainCursorsRepo,
    private readonly deps: { repo: LedgerRepo; ledger: Ledger; chain: EvmChain; events: DeviceEvents; confirmations: number; clock: Clock; logger: Logger },
  ) {}

  async scan(): Promise<{ from: number; to: number; credited: number } | null> {
    const { chain, repo, ledger, logger } = this.deps;
    const head = Number(await chain.head());
    const safe = head - Math.max(this.deps.confirmations, 1) + 1;
    const from = await this.cursors.nextBlock('deposits', head);
    const to = Math.min(safe, from + BLOCKS_PER_RUN - 1);
    if (to < from) return null;
    const payments = await chain.paymentsIn(BigInt(from), BigInt(to));
    const addresses = [...new Set(payments.map((p) => p.to))];
    const wallets = addresses.length === 0 ? [] : await repo.byDepositAddresses(addresses);
    const byAddress = new Map(wallets.map((w) => [w.depositAddress, w]));
    let credited = 0;
    for (const payment of payments) {
      const wallet = byAddress.get(payment.to);
      if (!wallet) continue;
      if (wallet.currency !== payment.currency) {
        logger.warn({ walletId: wallet._id, txHash: payment.txHash, currency: payment.currency }, 'a deposit in another currency than its wallet\'s: left on chain');
        continue;
      }
      const chainAccount = await ledger.ensureSystemAccount('chain', payment.currency);
      const id = `deposit:${payment.txHash}:${payment.index}`;
      const before = (await repo.entryExists(id)) ? 1 : 0;
      await ledger.post({ id, kind: 'DEPOSIT', currency: payment.currency, amount: payment.units, debit: chainAccount, credit: wallet._id, fingerprint: `${payment.to}:${payment.units}`, memo: { userId: must(wallet.userId, 'a wallet\'s owner'), note: payment.txHash } });
      if (before === 0) {
        credited++;
        await this.deps.events.toUsers([must(wallet.userId, 'a wallet\'s owner')], 'wallet.deposit-received', { walletId: wallet._id, currency: payment.currency, amount: formatAmount(payment.units, payment.currency), txHash: payment.txHash });
      }
    }
    // Saved only now: a crash before this line reads these blocks again, and credits nothing twice.
    await this.cursors.advance('deposits', from, to + 1);
    return { from, to, credited };
  }
}
