import type { Collection, Db, Decimal128 } from 'mongodb';
import type { Currency } from './money.js';
import type { z } from 'zod';
import type { SwapDtoSchema } from './wallets.schemas.js';

type SwapView = z.infer<typeof SwapDtoSchema>;

export interface QuoteDoc {
  _id: string;
  userId: string;
  fromWalletId: string;
  toWalletId: string;
  fromCurrency: Currency;
  toCurrency: Currency;
  amount: Decimal128;
  fee: Decimal128;
  price: string;
  receive: Decimal128;
  expiresAt: Date;
  acceptedAt: Date | null;
  createdAt: Date;
}

export interface SwapDoc extends Omit<QuoteDoc, 'acceptedAt' | 'expiresAt'> {
  quoteId: string;
  status: SwapView['status'];
  completedAt: Date | null;
}

/** Swap quotes (`wallet_swap_quotes`, taken once by a conditional update) and swaps (`wallet_swaps`, one per quote). */
export class SwapsRepo {
  private readonly quotes: Collection<QuoteDoc>;
  private readonly swaps: Collection<SwapDoc>;

  constructor(db: Db) {
    this.quotes = db.collection<QuoteDoc>('wallet_swap_quotes');
    this.swaps = db.collection<SwapDoc>('wallet_swaps');
  }

  async ensureIndexes(): Promise<void> {
    await this.swaps.createIndexes([
      { key: { quoteId: 1 }, name: 'one_swap_per_quote', unique: true },
      { key: { fromWalletId: 1, createdAt: -1 }, name: 'swaps_from_wallet' },
      { key: { toWalletId: 1, createdAt: -1 }, name: 'swaps_to_wallet' },
      { key: { status: 1 }, name: 'by_status' },
    ]);
  }

  async insertQuote(quote: QuoteDoc): Promise<void> {
    await this.quotes.insertOne(quote);
  }

  findQuote(quoteId: string): Promise<QuoteDoc | null> {
    return this.quotes.findOne({ _id: quoteId });
  }

  /** Takes a quote not accepted yet and unexpired at `now`; null when it was used or has expired. */
  takeQuote(quoteId: string, now: Date): Promise<QuoteDoc | null> {
    return this.quotes.findOneAndUpdate({ _id: quoteId, acceptedAt: null, expiresAt: { $gt: now } }, { $set: { acceptedAt: now } });
  }

  /** Throws the driver's duplicate-key error when the quote already has its swap. */
  async insertSwap(swap: SwapDoc): Promise<void> {
    await this.swaps.insertOne(swap);
  }

  findSwap(swapId: string): Promise<SwapDoc | null> {
    return this.swaps.findOne({ _id: swapId });
  }

  async markFailed(swapId: string): Promise<void> {
    await this.swaps.updateOne({ _id: swapId }, { $set: { status: 'FAILED' } });
  }

  /** Completes a pending swap; null when it was not pending. */
  complete(swapId: string, at: Date): Promise<SwapDoc | null> {
    return this.swaps.findOneAndUpdate({ _id: swapId, status: 'PENDING' }, { $set: { status: 'COMPLETED', completedAt: at } }, { returnDocument: 'after' });
  }

  /** Swaps still pending that were made before `before`. */
  pendingBefore(before: Date): Promise<SwapDoc[]> {
    return this.swaps.find({ status: 'PENDING', createdAt: { $lt: before } }).toArray();
  }

  /** One page of a wallet's swaps (from or to it, not failed), newest first, and how many there are. */
  async pageOfWallet(walletId: string, pageSize: number, currentPage: number): Promise<{ items: SwapDoc[]; total: number }> {
    const filter = { $or: [{ fromWalletId: walletId }, { toWalletId: walletId }], status: { $ne: 'FAILED' as const } };
    const [items, total] = await Promise.all([
      this.swaps.find(filter).sort({ createdAt: -1, _id: -1 }).skip(currentPage * pageSize).limit(pageSize).toArray(),
      this.swaps.countDocuments(filter),
    ]);
    return { items, total };
  }

  /** Ids of the member's swaps still waiting for the house (PENDING). */
  async unfinishedOf(userId: string): Promise<string[]> {
    return (await this.swaps.find({ userId, status: 'PENDING' }, { projection: { _id: 1 } }).toArray()).map((swap) => swap._id);
  }
}
