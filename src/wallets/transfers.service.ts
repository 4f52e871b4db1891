import type { z } from 'zod';
import { createHash } from 'node:crypto';
import type { BiometricService } from '../devices/index.js';
import type { DeviceEvents } from '../platform/device-events.js';
import { AppError } from '../platform/errors.js';
import type { Principal } from '../platform/principal.js';
import type { UserReads } from '../users/index.js';
import { UsersErrors } from '../users/users.errors.js';
import { InsufficientFunds, type Ledger } from './ledger.js';
import type { JournalDoc, LedgerRepo } from './ledger.repo.js';
import { formatAmount, fromStored, parseAmount } from './money.js';
import type { WalletTransactionDtoSchema, WalletTransactionRequestSchema } from './wallets.schemas.js';
import { WalletsErrors } from './wallets.errors.js';
import type { WalletsService } from './wallets.service.js';

export type TransferInput = z.infer<typeof WalletTransactionRequestSchema>;
export type TransferView = z.infer<typeof WalletTransactionDtoSchema>;

/** What the device signs for a transfer (README, "Wallets"). */
export const transferSigned = (nonce: string, item: Pick<TransferInput, 'requestId' | 'fromWalletId' | 'toUserId' | 'amount'>) =>
  `BIOMETRIC_CONFIRM_V1|${nonce}|TRANSFER|${item.requestId}|${item.fromWalletId}|${item.toUserId}|${item.amount}`;

const fingerprintOf = (item: TransferInput) => createHash('sha256').update(JSON.stringify([item.fromWalletId, item.toUserId, item.amount, item.note ?? null])).digest('base64url');

/**
 * Transfers between members (spec, "Wallets", rule 3): each item of the array is one ledger entry
 * from the caller's wallet to the recipient's oldest wallet of that currency, free of charge. Items are
 * handled in order and answered one by one: a refused item changes nothing and does not stop the
 * others. A device with a biometric key signs every item. The same requestId with the same fields
 * returns the first result, with other fields 400 REQUEST_ID_REUSED.
 */
export class TransfersService {
  constructor(
    private readonly deps: {
      repo: LedgerRepo;
      ledger: Ledger;
      wallets: WalletsService;
      users: UserReads;
      biometric: BiometricService;
      events: DeviceEvents;
    },
  ) {}

  async transfer(principal: Principal, items: TransferInput[]): Promise<TransferView[]> {
    const results: TransferView[] = [];
    for (const item of items) results.push(await this.one(principal, item));
    return results;
  }

  private async one(principal: Principal, item: TransferInput): Promise<TransferView> {
    const entryId = `transfer:${principal.userId}:${item.requestId}`;
    const base = { requestId: item.requestId, fromWalletId: item.fromWalletId, toUserId: item.toUserId, amount: item.amount, note: item.note ?? null };
    try {
      // A repeat answers as the first time, without asking the device again.
      const earlier = await this.deps.repo.findEntry(entryId);
      if (earlier) {
        if (earlier.fingerprint !== fingerprintOf(item)) throw WalletsErrors.REQUEST_ID_REUSED();
        if (earlier.state === 'FAILED') throw WalletsErrors.INSUFFICIENT_FUNDS();
        const settled = await this.deps.ledger.awaitEnd(earlier);
        if (settled.state === 'FAILED') throw WalletsErrors.INSUFFICIENT_FUNDS();
        return this.completed(base, settled);
      }
      const entry = await this.post(principal, item, entryId);
      return this.completed(base, entry);
    } catch (error) {
      if (!(error instanceof AppError) || error.status >= 500) throw error;
      return { ...base, id: null, currency: null, status: 'REFUSED', error: { code: error.code, message: error.message }, createdAt: new Date().toISOString() };
    }
  }

  private async post(principal: Principal, item: TransferInput, entryId: string): Promise<JournalDoc> {
    const { wallets, users, biometric, ledger } = this.deps;
    const from = await wallets.owned(principal, item.fromWalletId);
    const amount = parseAmount(item.amount, from.currency);
    if (amount === null) throw WalletsErrors.AMOUNT_INVALID();
    if (item.toUserId === principal.userId) throw WalletsErrors.TRANSFER_TO_SELF();
    const to = await wallets.primaryWallet(item.toUserId, from.currency);
    if (!to) throw (await users.findById(item.toUserId)) ? WalletsErrors.RECIPIENT_HAS_NO_WALLET() : UsersErrors.USER_NOT_FOUND();
    await biometric.confirmAction(principal, item.biometric, (nonce) => transferSigned(nonce, item));
    try {
      const entry = await ledger.post({
        id: entryId,
        kind: 'TRANSFER',
        currency: from.currency,
        amount,
        debit: from._id,
        credit: to._id,
        fingerprint: fingerprintOf(item),
        memo: { userId: principal.userId, requestId: item.requestId, note: item.note ?? null, fromUserId: principal.userId, toUserId: item.toUserId },
      });
      await this.deps.events.toUsers([item.toUserId], 'wallet.transfer-received', {
        entryId: entry._id,
        fromUserId: principal.userId,
        walletId: to._id,
        currency: from.currency,
        amount: formatAmount(amount, from.currency),
      });
      return entry;
    } catch (error) {
      if (error instanceof InsufficientFunds) throw WalletsErrors.INSUFFICIENT_FUNDS();
      throw error;
    }
  }

  private completed(base: Omit<TransferView, 'id' | 'currency' | 'status' | 'error' | 'createdAt'>, entry: JournalDoc): TransferView {
    return { ...base, id: entry._id, currency: entry.currency, amount: formatAmount(fromStored(entry.amount), entry.currency), status: entry.state === 'DONE' ? 'COMPLETED' : 'PENDING', error: null, createdAt: entry.createdAt.toISOString() };
  }
}
