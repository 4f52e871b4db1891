import type { z } from 'zod';
import { createHash, randomUUID } from 'node:crypto';
import type { BiometricService } from '../devices/index.js';
import type { Clock } from '../platform/clock.js';
import type { DeviceEvents } from '../platform/device-events.js';
import type { Logger } from '../platform/logger.js';
import { isDuplicateKey } from '../platform/mongo.js';
import type { Principal } from '../platform/principal.js';
import { EvmChain, isUnreachable } from './chain.js';
import { InsufficientFunds, type Ledger } from './ledger.js';
import { formatAmount, fromStored, parseAmount, toStored, type Currency } from './money.js';
import type { WithdrawalCreateSchema, WithdrawalDtoSchema } from './wallets.schemas.js';
import { WalletsErrors } from './wallets.errors.js';
import type { WalletsService } from './wallets.service.js';
import type { WithdrawalDoc, WithdrawalsRepo } from './withdrawals.repo.js';
import { must } from '../platform/must.js';

export type WithdrawalInput = z.infer<typeof WithdrawalCreateSchema>;
export type WithdrawalView = z.infer<typeof WithdrawalDtoSchema>;
export type WithdrawalStatus = WithdrawalView['status'];


/** What the device signs for a withdrawal (docs/clients/wallets.md). */
export const withdrawSigned = (nonce: string, item: Pick<WithdrawalInput, 'requestId' | 'walletId' | 'toAddress' | 'amount'>) =>
  `BIOMETRIC_CONFIRM_V1|${nonce}|WITHDRAW|${item.requestId}|${item.walletId}|${item.toAddress}|${item.amount}`;

const fingerprintOf = (input: WithdrawalInput) => createHash('sha256').update(JSON.stringify([input.walletId, input.toAddress.toLowerCase(), input.amount])).digest('base64url');

function present(doc: WithdrawalDoc): WithdrawalView {
  return {
    id: doc._id,
    requestId: doc.requestId,
    walletId: doc.walletId,
    currency: doc.currency,
    amount: formatAmount(fromStored(doc.amount), doc.currency),
    fee: formatAmount(fromStored(doc.fee), doc.currency),
    toAddress: doc.toAddress,
    status: doc.status,
    txHash: doc.txHash,
    createdAt: doc.createdAt.toISOString(),
  };
}

const DAY_MS = 24 * 3600 * 1000;

/**
 * Withdrawals to an address on chain (spec, "Wallets", rule 2). Checks come first (ownership, amount,
 * address, biometric, the 24-hour sending limit, balance); then the withdrawal is recorded and the
 * amount and fee move from the wallet to the outgoing account (the hold) before anything is sent, so
 * a lost chain answer never undoes the debit. A worker, holding the hot wallet's lock, signs the payment
 * with the chain's next nonce for it, stores the signed bytes, then broadcasts them (again after a
 * crash: same bytes, same hash, paid at most once; if another payment took that nonce meanwhile, the
 * stored one can never be mined and is refunded). While the chain's node does not answer, a withdrawal
 * stays where it is (pending, or sent) and the sweep tries again: no answer is never taken for a
 * refusal, since a broadcast whose answer was lost may still be mined. Confirmed after
 * DEPOSIT_CONFIRMATIONS blocks: the hold goes to the chain and fee accounts.
 * A transaction the chain refuses or reverts is refunded to the wallet. The caller's devices hear
 * every status.
 */
export class WithdrawalsService {
  constructor(
    private readonly repo: WithdrawalsRepo,
    private readonly deps: {
      ledger: Ledger;
      wallets: WalletsService;
      chain: EvmChain;
      biometric: BiometricService;
      events: DeviceEvents;
      /** Runs `fn` while holding the hot wallet's lock: one signer at a time across processes, so nonces go in order. */
      withHotWallet: <T>(fn: () => Promise<T>) => Promise<T>;
      enqueueSend: (withdrawalId: string) => Promise<void>;
      fees: Record<Currency, bigint>;
      /** The account's 24-hour sending limit in a currency (null: none). */
      limitOf: (userId: string, currency: Currency) => Promise<bigint | null>;
      confirmations: number;
      /** How long a withdrawal may stay unsent before the sweep sends it again. */
      resendAfterMs: number;
      clock: Clock;
      logger: Logger;
    },
  ) {}

  async get(principal: Principal, withdrawalId: string): Promise<WithdrawalView> {
    const doc = await this.repo.findById(withdrawalId);
    if (!doc || doc.userId !== principal.userId) throw WalletsErrors.WITHDRAWAL_NOT_FOUND();
    return present(doc);
  }

  async create(principal: Principal, input: WithdrawalInput): Promise<WithdrawalView> {
    const key = `${principal.userId}:${input.requestId}`;
    const earlier = await this.repo.findByKey(key);
    if (earlier) return this.repeat(earlier, input);

    const wallet = await this.deps.wallets.owned(principal, input.walletId);
    const amount = parseAmount(input.amount, wallet.currency);
    if (amount === null) throw WalletsErrors.AMOUNT_INVALID();
    if (!EvmChain.isValidAddress(input.toAddress)) throw WalletsErrors.ADDRESS_INVALID();
    await this.deps.biometric.confirmAction(principal, input.biometric, (nonce) => withdrawSigned(nonce, input));
    await this.assertWithinLimit(principal.userId, wallet.currency, amount);
    const fee = this.deps.fees[wallet.currency];
    if (fromStored(wallet.available) < amount + fee) throw WalletsErrors.INSUFFICIENT_FUNDS();

    const now = this.deps.clock();
    const doc: WithdrawalDoc = {
      _id: randomUUID(),
      key,
      requestId: input.requestId,
      userId: principal.userId,
      walletId: wallet._id,
      currency: wallet.currency,
      amount: toStored(amount),
      fee: toStored(fee),
      toAddress: input.toAddress.toLowerCase(),
      fingerprint: fingerprintOf(input),
      status: 'pending',
      rawTx: null,
      txHash: null,
      nonce: null,
      failure: null,
      createdAt: now,
      updatedAt: now,
    };
    try {
      await this.repo.insert(doc);
    } catch (error) {
      if (!isDuplicateKey(error)) throw error;
      return this.repeat(must(await this.repo.findByKey(key), 'the withdrawal under this key'), input);
    }
    if (!(await this.hold(doc))) throw WalletsErrors.INSUFFICIENT_FUNDS();
    await this.tell(doc, 'pending');
    await this.deps.enqueueSend(doc._id);
    return present(doc);
  }

  /** A repeated requestId: the first result, or 400 when other fields came with it. */
  private async repeat(earlier: WithdrawalDoc, input: WithdrawalInput): Promise<WithdrawalView> {
    if (earlier.fingerprint !== fingerprintOf(input)) throw WalletsErrors.REQUEST_ID_REUSED();
    return present(must(await this.repo.findById(earlier._id), 'the withdrawal'));
  }

  /** The 24-hour sending limit of the account's tier: withdrawals not refused count. */
  private async assertWithinLimit(userId: string, currency: Currency, amount: bigint): Promise<void> {
    const limit = await this.deps.limitOf(userId, currency);
    if (limit === null) return;
    const since = new Date(this.deps.clock().getTime() - DAY_MS);
    const recent = await this.repo.sentAmountsSince(userId, currency, since);
    const sent = recent.reduce((sum, w) => sum + fromStored(w.amount), 0n);
    if (sent + amount > limit) {
      throw WalletsErrors.LIMIT_EXCEEDED({ message: `At most ${formatAmount(limit, currency)} ${currency} in 24 hours; ${formatAmount(sent, currency)} already sent` });
    }
  }

  /** The hold: amount and fee from the wallet to the outgoing account. False (and the withdrawal refused) when the wallet cannot pay. */
  private async hold(doc: WithdrawalDoc): Promise<boolean> {
    const outgoing = await this.deps.ledger.ensureSystemAccount('outgoing', doc.currency);
    try {
      await this.deps.ledger.post({
        id: `withdrawal-hold:${doc._id}`,
        kind: 'WITHDRAWAL',
        currency: doc.currency,
        amount: fromStored(doc.amount) + fromStored(doc.fee),
        debit: doc.walletId,
        credit: outgoing,
        fingerprint: doc._id,
        memo: { userId: doc.userId, requestId: doc.requestId, note: `to ${doc.toAddress}` },
      });
      return true;
    } catch (error) {
      if (!(error instanceof InsufficientFunds)) throw error;
      await this.setStatus(doc, ['pending'], 'refused', { failure: 'INSUFFICIENT_FUNDS' });
      return false;
    }
  }

  /** The worker's step: sign with the next nonce, store, broadcast. Safe to repeat. */
  async send(withdrawalId: string): Promise<void> {
    let doc = await this.repo.findById(withdrawalId);
    if (!doc || doc.status !== 'pending') return;
    // A crash between recording the withdrawal and its hold: the hold first (once, by its key).
    if (!(await this.hold(doc))) return;
    doc = must(await this.repo.findById(withdrawalId), 'the withdrawal');
    const { chain } = this.deps;
    const outcome = await this.deps.withHotWallet(async () => {
      let current = must(doc, 'the withdrawal');
      if (!current.rawTx) {
        let signed;
        try {
          signed = await chain.signTransfer({ currency: current.currency, to: current.toAddress, units: fromStored(current.amount), nonce: await chain.chainNonce() });
        } catch (error) {
          // No answer from the node: nothing was signed or sent, so the withdrawal stays pending for the sweep.
          if (isUnreachable(error)) throw error;
          this.deps.logger.warn({ err: error, withdrawalId }, 'the chain refused to estimate a withdrawal');
          return 'REFUSED' as const;
        }
        const stored = await this.repo.storeSigned(current._id, { rawTx: signed.raw, txHash: signed.hash, nonce: signed.nonce }, this.deps.clock());
        if (!stored) return 'DONE_ELSEWHERE' as const;
        current = stored;
      }
      return (await chain.broadcast(must(current.rawTx, 'the signed transaction'), must(current.txHash, 'its hash'))) ? ('SENT' as const) : ('REFUSED' as const);
    });
    if (outcome === 'SENT') {
      const sent = await this.setStatus(doc, ['pending'], 'sent');
      if (sent) await this.tell(sent, 'sent');
    } else if (outcome === 'REFUSED') {
      await this.refund(doc, 'REFUSED_BY_CHAIN');
    }
  }

  /**
   * The repeated sweep: confirms sent withdrawals that have their confirmations, refunds those the chain
   * reverted or lost, and sends pending ones a crash or a silent chain left behind. When the node does
   * not answer, the sweep stops and nothing changes (it never reads silence as a refusal).
   */
  async sweep(): Promise<{ confirmed: number; refunded: number; resent: number }> {
    const counts = { confirmed: 0, refunded: 0, resent: 0 };
    const stale = new Date(this.deps.clock().getTime() - this.deps.resendAfterMs);
    for (const doc of await this.repo.pendingSince(stale)) {
      await this.send(doc._id);
      counts.resent++;
    }
    for (const doc of await this.repo.sent()) {
      const state = await this.deps.chain.state(must(doc.txHash, 'a sent withdrawal\'s hash'));
      if (state.state === 'MINED' && !state.success) {
        await this.refund(doc, 'REVERTED');
        counts.refunded++;
      } else if (state.state === 'MINED' && state.confirmations >= this.deps.confirmations) {
        await this.settle(doc);
        counts.confirmed++;
      } else if (state.state === 'UNKNOWN' && !(await this.deps.chain.broadcast(must(doc.rawTx, 'a sent withdrawal\'s transaction'), must(doc.txHash, 'its hash')))) {
        // The chain lost it and will not take it again (its nonce was used by another transaction).
        await this.refund(doc, 'DROPPED');
        counts.refunded++;
      }
    }
    return counts;
  }

  /** Confirmed: the amount leaves for the chain, the fee goes to the fee account. */
  private async settle(doc: WithdrawalDoc): Promise<void> {
    const { ledger } = this.deps;
    const [outgoing, chainAccount, fees] = await Promise.all([
      ledger.ensureSystemAccount('outgoing', doc.currency),
      ledger.ensureSystemAccount('chain', doc.currency),
      ledger.ensureSystemAccount('fees', doc.currency),
    ]);
    const memo = { userId: doc.userId, requestId: doc.requestId, note: `to ${doc.toAddress}` };
    await ledger.post({ id: `withdrawal-paid:${doc._id}`, kind: 'WITHDRAWAL', currency: doc.currency, amount: fromStored(doc.amount), debit: outgoing, credit: chainAccount, fingerprint: doc._id, memo });
    if (fromStored(doc.fee) > 0n) {
      await ledger.post({ id: `withdrawal-fee:${doc._id}`, kind: 'WITHDRAWAL', currency: doc.currency, amount: fromStored(doc.fee), debit: outgoing, credit: fees, fingerprint: doc._id, memo });
    }
    const confirmed = await this.setStatus(doc, ['sent'], 'confirmed');
    if (confirmed) await this.tell(confirmed, 'confirmed');
  }

  /** Refused by the chain: the hold goes back to the wallet. */
  private async refund(doc: WithdrawalDoc, reason: string): Promise<void> {
    const outgoing = await this.deps.ledger.ensureSystemAccount('outgoing', doc.currency);
    await this.deps.ledger.post({
      id: `withdrawal-refund:${doc._id}`,
      kind: 'WITHDRAWAL',
      currency: doc.currency,
      amount: fromStored(doc.amount) + fromStored(doc.fee),
      debit: outgoing,
      credit: doc.walletId,
      fingerprint: doc._id,
      memo: { userId: doc.userId, requestId: doc.requestId, note: `refund: ${reason}` },
    });
    const refunded = await this.setStatus(doc, ['pending', 'sent'], 'refunded', { failure: reason });
    if (refunded) await this.tell(refunded, 'refunded');
  }

  private async setStatus(doc: WithdrawalDoc, from: WithdrawalStatus[], to: WithdrawalStatus, extra: Partial<WithdrawalDoc> = {}): Promise<WithdrawalDoc | null> {
    return this.repo.setStatus(doc._id, from, to, this.deps.clock(), extra);
  }

  private async tell(doc: WithdrawalDoc, status: WithdrawalStatus): Promise<void> {
    await this.deps.events.toUsers([doc.userId], 'wallet.withdrawal-updated', { withdrawalId: doc._id, walletId: doc.walletId, status, txHash: doc.txHash });
  }
}
