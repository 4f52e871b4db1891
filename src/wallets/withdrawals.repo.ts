import type { Collection, Db, Decimal128 } from 'mongodb';
import type { Hex } from 'viem';
import { fromStored, type Currency } from './money.js';
import type { z } from 'zod';
import type { WithdrawalDtoSchema } from './wallets.schemas.js';

type WithdrawalStatus = z.infer<typeof WithdrawalDtoSchema>['status'];

export interface WithdrawalDoc {
  _id: string;
  /** `<userId>:<requestId>`: unique, so a request is made once. */
  key: string;
  requestId: string;
  userId: string;
  walletId: string;
  currency: Currency;
  amount: Decimal128;
  fee: Decimal128;
  toAddress: string;
  fingerprint: string;
  status: WithdrawalStatus;
  /** The signed transaction, stored before it is broadcast: a retry broadcasts these same bytes. */
  rawTx: Hex | null;
  txHash: Hex | null;
  nonce: number | null;
  failure: string | null;
  createdAt: Date;
  updatedAt: Date;
}

/** The withdrawals (`wallet_withdrawals`): one document each, its status moved by conditional updates. */
export class WithdrawalsRepo {
  private readonly withdrawals: Collection<WithdrawalDoc>;

  constructor(db: Db) {
    this.withdrawals = db.collection<WithdrawalDoc>('wallet_withdrawals');
  }

  async ensureIndexes(): Promise<void> {
    await this.withdrawals.createIndexes([
      { key: { key: 1 }, name: 'request_key', unique: true },
      { key: { status: 1, updatedAt: 1 }, name: 'by_status' },
      { key: { userId: 1, currency: 1, createdAt: -1 }, name: 'recent_of_user' },
    ]);
  }

  findById(withdrawalId: string): Promise<WithdrawalDoc | null> {
    return this.withdrawals.findOne({ _id: withdrawalId });
  }

  /** The withdrawal made under `<userId>:<requestId>`. */
  findByKey(key: string): Promise<WithdrawalDoc | null> {
    return this.withdrawals.findOne({ key });
  }

  /** Throws the driver's duplicate-key error when the request key was taken meanwhile. */
  async insert(doc: WithdrawalDoc): Promise<void> {
    await this.withdrawals.insertOne(doc);
  }

  /** What each wallet has on its way out: amount and fee of its withdrawals not yet confirmed or refunded. */
  async heldOf(walletIds: string[]): Promise<Map<string, bigint>> {
    const held = new Map<string, bigint>();
    if (walletIds.length === 0) return held;
    const unfinished = await this.withdrawals.find({ walletId: { $in: walletIds }, status: { $in: ['pending', 'sent'] } }, { projection: { walletId: 1, amount: 1, fee: 1 } }).toArray();
    for (const w of unfinished) held.set(w.walletId, (held.get(w.walletId) ?? 0n) + fromStored(w.amount) + fromStored(w.fee));
    return held;
  }

  /** Amounts of the account's withdrawals in a currency since `since` that count against its limit (not refunded). */
  sentAmountsSince(userId: string, currency: Currency, since: Date): Promise<Pick<WithdrawalDoc, '_id' | 'amount'>[]> {
    return this.withdrawals.find({ userId, currency, createdAt: { $gte: since }, status: { $in: ['pending', 'sent', 'confirmed'] } }, { projection: { amount: 1 } }).toArray();
  }

  /** Stores the signed transaction of a pending withdrawal not signed yet; null when another worker did first. */
  storeSigned(withdrawalId: string, signed: { rawTx: Hex; txHash: Hex; nonce: number }, at: Date): Promise<WithdrawalDoc | null> {
    return this.withdrawals.findOneAndUpdate({ _id: withdrawalId, status: 'pending', rawTx: null }, { $set: { ...signed, updatedAt: at } }, { returnDocument: 'after' });
  }

  /** Pending withdrawals untouched since `before` (a worker died, or the chain did not answer). */
  pendingSince(before: Date): Promise<WithdrawalDoc[]> {
    return this.withdrawals.find({ status: 'pending', updatedAt: { $lt: before } }).toArray();
  }

  /** Withdrawals broadcast and not yet confirmed or refunded. */
  sent(): Promise<WithdrawalDoc[]> {
    return this.withdrawals.find({ status: 'sent' }).toArray();
  }

  /** Moves a withdrawal from one of `from` to `to` (with `extra`); null when it was in none of them. */
  setStatus(withdrawalId: string, from: WithdrawalStatus[], to: WithdrawalStatus, at: Date, extra: Partial<WithdrawalDoc> = {}): Promise<WithdrawalDoc | null> {
    return this.withdrawals.findOneAndUpdate({ _id: withdrawalId, status: { $in: from } }, { $set: { status: to, updatedAt: at, ...extra } }, { returnDocument: 'after' });
  }

  /** Ids of the member's withdrawals not finished yet (pending or sent). */
  async unfinishedOf(userId: string): Promise<string[]> {
    return (await this.withdrawals.find({ userId, status: { $in: ['pending', 'sent'] } }, { projection: { _id: 1 } }).toArray()).map((w) => w._id);
  }
}
