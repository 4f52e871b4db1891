import type { z } from 'zod';
import { createHash } from 'node:crypto';
import type { BiometricService } from '../devices/index.js';
import type { DeviceEvents } from '../platform/device-events.js';
import { AppError } from '../platform/errors.js';
import type { Principal } from '../platform/principal.js';
import type { UserReads } from '../users/index.js';
import { UsersErrors } from '../users/users.errors.js';
import { InsufficientFunds, type Ledger } from './ledger.js';
import type { AccountDoc, JournalDoc, LedgerRepo } from './ledger.repo.js';
import { must } from '../platform/must.js';
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

  /**
   * The whole request is checked first (spec, "Wallets", rules 1 and 6): every item's source wallet is
   * the caller's, its amount valid, its recipient another member with a wallet of that currency, no
   * requestId twice or reused with other fields, and every biometric signature valid. A failure answers
   * the same 400 (or 403 for the biometric confirmation) as everywhere, and nothing is applied. Then the
   * items are applied in order; only what is decided while applying (the balance at that moment, a
   * concurrent request under the same requestId) is an item's own REFUSED outcome.
   */
  async transfer(principal: Principal, items: TransferInput[]): Promise<TransferView[]> {
    const checked: Checked[] = [];
    const seen = new Set<string>();
    for (const item of items) {
      if (seen.has(item.requestId)) throw WalletsErrors.REQUEST_ID_REUSED({ message: `requestId ${item.requestId} appears twice in the request` });
      seen.add(item.requestId);
      checked.push(await this.check(principal, item));
    }
    // Biometric confirmations last: a nonce is spent only when every other check of the request passed.
    for (const one of checked) if (!one.earlier) await this.deps.biometric.confirmAction(principal, one.item.biometric, (nonce) => transferSigned(nonce, one.item));
    const results: TransferView[] = [];
    for (const one of checked) results.push(await this.apply(principal, one));
    return results;
  }

  /** One item's checks (nothing written); a repeat of an earlier request is answered from its entry. */
  private async check(principal: Principal, item: TransferInput): Promise<Checked> {
    const entryId = `transfer:${principal.userId}:${item.requestId}`;
    // A repeat answers as the first time, without asking the device again.
    const earlier = await this.deps.repo.findEntry(entryId);
    if (earlier) {
      if (earlier.fingerprint !== fingerprintOf(item)) throw WalletsErrors.REQUEST_ID_REUSED();
      return { item, entryId, earlier };
    }
    const { wallets, users } = this.deps;
    const from = await wallets.owned(principal, item.fromWalletId);
    const amount = parseAmount(item.amount, from.currency);
    if (amount === null) throw WalletsErrors.AMOUNT_INVALID();
    if (item.toUserId === principal.userId) throw WalletsErrors.TRANSFER_TO_SELF();
    const to = await wallets.primaryWallet(item.toUserId, from.currency);
    if (!to) throw (await users.findById(item.toUserId)) ? WalletsErrors.RECIPIENT_HAS_NO_WALLET() : UsersErrors.USER_NOT_FOUND();
    return { item, entryId, earlier: null, move: { from, to, amount } };
  }

  private async apply(principal: Principal, { item, entryId, earlier, move }: Checked): Promise<TransferView> {
    const base = { requestId: item.requestId, fromWalletId: item.fromWalletId, toUserId: item.toUserId, amount: item.amount, note: item.note ?? null };
    try {
      if (earlier) {
        if (earlier.state === 'FAILED') throw WalletsErrors.INSUFFICIENT_FUNDS();
        const settled = await this.deps.ledger.awaitEnd(earlier);
        if (settled.state === 'FAILED') throw WalletsErrors.INSUFFICIENT_FUNDS();
        return this.completed(base, settled);
      }
      return this.completed(base, await this.post(principal, item, entryId, must(move, 'the checked transfer')));
    } catch (error) {
      if (!(error instanceof AppError) || error.status >= 500) throw error;
      return { ...base, id: null, currency: null, status: 'REFUSED', error: { code: error.code, message: error.message }, createdAt: new Date().toISOString() };
    }
  }

  private async post(principal: Principal, item: TransferInput, entryId: string, { from, to, amount }: NonNullable<Checked['move']>): Promise<JournalDoc> {
    const { ledger } = this.deps;
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

/** An item that passed its checks: a repeat (its earlier entry) or a new move between two wallets. */
interface Checked {
  item: TransferInput;
  entryId: string;
  earlier: JournalDoc | null;
  move?: { from: AccountDoc; to: AccountDoc; amount: bigint };
}
