import type { z } from 'zod';
import { createHash } from 'node:crypto';
import type { BiometricService } from '../devices/index.js';
import type { DeviceEvents } from '../platform/device-events.js';
import { AppError } from '../platform/errors.js';
import type { Principal } from '../platform/principal.js';
import type { UserReads } from '../users/index.js';
import { UsersErrors } from '../users/users.errors.js';
import { AccountClosed, InsufficientFunds, type EntryRequest, type Ledger } from './ledger.js';
import { hasMoved, type JournalDoc, type LedgerRepo } from './ledger.repo.js';
import { must } from '../platform/must.js';
import { formatAmount, fromStored, parseAmount } from './money.js';
import type { WalletTransactionDtoSchema, WalletTransactionRequestSchema } from './wallets.schemas.js';
import { WalletsErrors } from './wallets.errors.js';
import type { Parties, WalletFacts, WalletsService } from './wallets.service.js';
import type { AfterAnswer } from '../platform/after-answer.js';

export type TransferInput = z.infer<typeof WalletTransactionRequestSchema>;
export type TransferView = z.infer<typeof WalletTransactionDtoSchema>;

/** What the device signs for a transfer (docs/clients/wallets.md). */
export const transferSigned = (nonce: string, item: Pick<TransferInput, 'requestId' | 'fromWalletId' | 'toUserId' | 'amount'>) =>
  `BIOMETRIC_CONFIRM_V1|${nonce}|TRANSFER|${item.requestId}|${item.fromWalletId}|${item.toUserId}|${item.amount}`;

const entryIdOf = (principal: Principal, item: TransferInput) => `transfer:${principal.userId}:${item.requestId}`;

/** The ledger entry of a checked new item. */
function entryOf(principal: Principal, { item, entryId, move }: Checked): EntryRequest {
  const { from, to, amount } = must(move, 'the checked transfer');
  return {
    id: entryId,
    kind: 'TRANSFER',
    currency: from.currency,
    amount,
    debit: from._id,
    credit: to._id,
    fingerprint: fingerprintOf(item),
    memo: { userId: principal.userId, requestId: item.requestId, note: item.note ?? null, fromUserId: principal.userId, toUserId: item.toUserId },
  };
}

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
  async transfer(principal: Principal, items: TransferInput[], afterAnswer?: AfterAnswer): Promise<TransferView[]> {
    const { repo, wallets } = this.deps;
    // The request's earlier entries and its wallets, each in one read for every item.
    const [earlierEntries, parties] = await Promise.all([
      repo.findEntries(items.map((item) => entryIdOf(principal, item))),
      wallets.parties(principal, items.map((item) => item.fromWalletId), items.map((item) => item.toUserId)),
    ]);
    const checked: Checked[] = [];
    const seen = new Set<string>();
    for (const item of items) {
      if (seen.has(item.requestId)) throw WalletsErrors.REQUEST_ID_REUSED({ message: `requestId ${item.requestId} appears twice in the request` });
      seen.add(item.requestId);
      const entryId = entryIdOf(principal, item);
      checked.push(await this.check(principal, item, entryId, earlierEntries.find((entry) => entry._id === entryId) ?? null, parties));
    }
    const fresh = checked.filter((one) => !one.earlier);
    // Biometric confirmations last: a nonce is spent only when every other check of the request passed.
    await this.deps.biometric.confirmActions(
      principal,
      fresh.map(({ item }) => ({ confirmation: item.biometric, signedFor: (nonce: string) => transferSigned(nonce, item) })),
    );
    // The new items go to the ledger together, in order (a wallet that pays for one item of two pays the first).
    // Each outcome is taken as it comes (settled), so a refusal is never an unhandled rejection while an earlier item is answered.
    const outcomes = this.deps.ledger.postAll(fresh.map((one) => entryOf(principal, one)), { afterAnswer }).map((outcome) => outcome.then((entry): Posted => ({ entry }), (error: unknown): Posted => ({ error })));
    const posted = new Map(fresh.map((one, i) => [one, outcomes[i]] as const));
    const results: TransferView[] = [];
    for (const one of checked) results.push(await this.answer(principal, one, posted.get(one)));
    return results;
  }

  /** One item's checks (nothing written); a repeat of an earlier request is answered from its entry. */
  private async check(principal: Principal, item: TransferInput, entryId: string, earlier: JournalDoc | null, parties: Parties): Promise<Checked> {
    // A repeat answers as the first time, without asking the device again.
    if (earlier) {
      if (earlier.fingerprint !== fingerprintOf(item)) throw WalletsErrors.REQUEST_ID_REUSED();
      return { item, entryId, earlier };
    }
    const from = parties.owned(item.fromWalletId);
    const amount = parseAmount(item.amount, from.currency);
    if (amount === null) throw WalletsErrors.AMOUNT_INVALID();
    if (item.toUserId === principal.userId) throw WalletsErrors.TRANSFER_TO_SELF();
    const to = parties.primaryWallet(item.toUserId, from.currency);
    if (!to) {
      const recipient = await this.deps.users.findById(item.toUserId);
      throw recipient && !recipient.deletedAt ? WalletsErrors.RECIPIENT_HAS_NO_WALLET() : UsersErrors.USER_NOT_FOUND();
    }
    return { item, entryId, earlier: null, move: { from, to, amount } };
  }

  /** An item's outcome: its earlier entry's, or the one just posted (`posted`), and the recipient told. */
  private async answer(principal: Principal, { item, earlier, move }: Checked, posted: Promise<Posted> | undefined): Promise<TransferView> {
    const base = { requestId: item.requestId, fromWalletId: item.fromWalletId, toUserId: item.toUserId, amount: item.amount, note: item.note ?? null };
    try {
      if (earlier) {
        const settled = earlier.state === 'FAILED' ? earlier : await this.deps.ledger.awaitEnd(earlier);
        if (settled.state === 'FAILED') throw settled.failure === 'ACCOUNT_CLOSED' ? UsersErrors.USER_NOT_FOUND() : WalletsErrors.INSUFFICIENT_FUNDS();
        return this.completed(base, settled);
      }
      const { from, to, amount } = must(move, 'the checked transfer');
      const outcome = await must(posted, 'the posted transfer');
      // A recipient who deleted their account while the transfer was on its way: refused, the money back.
      if ('error' in outcome) throw outcome.error instanceof InsufficientFunds ? WalletsErrors.INSUFFICIENT_FUNDS() : outcome.error instanceof AccountClosed ? UsersErrors.USER_NOT_FOUND() : outcome.error;
      const { entry } = outcome;
      await this.deps.events.toUsers([item.toUserId], 'wallet.transfer-received', {
        entryId: entry._id,
        fromUserId: principal.userId,
        walletId: to._id,
        currency: from.currency,
        amount: formatAmount(amount, from.currency),
      });
      return this.completed(base, entry);
    } catch (error) {
      if (!(error instanceof AppError) || error.status >= 500) throw error;
      return { ...base, id: null, currency: null, status: 'REFUSED', error: { code: error.code, message: error.message }, createdAt: new Date().toISOString() };
    }
  }

  private completed(base: Omit<TransferView, 'id' | 'currency' | 'status' | 'error' | 'createdAt'>, entry: JournalDoc): TransferView {
    return { ...base, id: entry._id, currency: entry.currency, amount: formatAmount(fromStored(entry.amount), entry.currency), status: hasMoved(entry) ? 'COMPLETED' : 'PENDING', error: null, createdAt: entry.createdAt.toISOString() };
  }
}

/** What the ledger made of a new item. */
type Posted = { entry: JournalDoc } | { error: unknown };

/** An item that passed its checks: a repeat (its earlier entry) or a new move between two wallets. */
interface Checked {
  item: TransferInput;
  entryId: string;
  earlier: JournalDoc | null;
  move?: { from: WalletFacts; to: WalletFacts; amount: bigint };
}
