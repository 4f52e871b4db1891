import type { Collection, Db, Decimal128 } from 'mongodb';
import type { Currency } from './money.js';
import type { z } from 'zod';
import type { PaymentRequestDtoSchema } from './wallets.schemas.js';

type PaymentRequestView = z.infer<typeof PaymentRequestDtoSchema>;

export type ItemStatus = 'OPEN' | 'PAYING' | 'PAID';

export interface PaymentRequestDoc {
  _id: string;
  requesterId: string;
  walletId: string;
  currency: Currency;
  note: string | null;
  status: PaymentRequestView['status'];
  /**
   * Items by recipient id (a map, so each is updated by its own path: mongo-java-server's positional
   * operator does not work with these queries).
   */
  items: Record<string, { amount: Decimal128; status: ItemStatus; paidAt: Date | null; claimedAt: Date | null }>;
  /** Recipients in the order asked, for "requests I am asked to pay". */
  recipientIds: string[];
  /** Items paid or being paid: a request with any cannot be cancelled. */
  busy: number;
  createdAt: Date;
  expiresAt: Date;
}

/**
 * Payment requests (`wallet_payment_requests`): each recipient's item is moved by its own path
 * (OPEN → PAYING → PAID, or back to OPEN) with `busy` counting items paid or being paid.
 */
export class PaymentRequestsRepo {
  private readonly requests: Collection<PaymentRequestDoc>;

  constructor(db: Db) {
    this.requests = db.collection<PaymentRequestDoc>('wallet_payment_requests');
  }

  async ensureIndexes(): Promise<void> {
    await this.requests.createIndexes([
      { key: { requesterId: 1, createdAt: -1 }, name: 'outgoing' },
      { key: { recipientIds: 1, createdAt: -1 }, name: 'incoming' },
      { key: { status: 1, expiresAt: 1 }, name: 'open_by_expiry' },
      { key: { busy: 1 }, name: 'being_paid' },
    ]);
  }

  async insert(doc: PaymentRequestDoc): Promise<void> {
    await this.requests.insertOne(doc);
  }

  findById(id: string): Promise<PaymentRequestDoc | null> {
    return this.requests.findOne({ _id: id });
  }

  /** One page of the requests a member made (`outgoing`) or is asked to pay (`incoming`), newest first, and how many there are. */
  async pageOf(userId: string, role: 'outgoing' | 'incoming', pageSize: number, currentPage: number): Promise<{ items: PaymentRequestDoc[]; total: number }> {
    const filter = role === 'outgoing' ? { requesterId: userId } : { recipientIds: userId };
    const [items, total] = await Promise.all([
      this.requests.find(filter).sort({ createdAt: -1, _id: -1 }).skip(currentPage * pageSize).limit(pageSize).toArray(),
      this.requests.countDocuments(filter),
    ]);
    return { items, total };
  }

  /** Cancels an open request no item of which is paid or being paid; null otherwise. */
  cancelIfIdle(id: string): Promise<PaymentRequestDoc | null> {
    return this.requests.findOneAndUpdate({ _id: id, status: 'OPEN', busy: 0 }, { $set: { status: 'CANCELLED' } }, { returnDocument: 'after' });
  }

  /** Claims a payer's open item of an open, unexpired request (PAYING); false when it was not there to claim. */
  async claimItem(id: string, payerId: string, now: Date): Promise<boolean> {
    const path = `items.${payerId}`;
    const claimed = await this.requests.updateOne(
      { _id: id, status: 'OPEN', expiresAt: { $gt: now }, [`${path}.status`]: 'OPEN' },
      { $set: { [`${path}.status`]: 'PAYING', [`${path}.claimedAt`]: now }, $inc: { busy: 1 } },
    );
    return claimed.modifiedCount > 0;
  }

  /** A claimed item whose payment did not happen goes back to OPEN. */
  async releaseItem(id: string, payerId: string): Promise<void> {
    const path = `items.${payerId}`;
    await this.requests.updateOne({ _id: id, [`${path}.status`]: 'PAYING' }, { $set: { [`${path}.status`]: 'OPEN', [`${path}.claimedAt`]: null }, $inc: { busy: -1 } });
  }

  /** A claimed item is PAID (at `at`); returns the request as it is then. */
  async markItemPaid(id: string, payerId: string, at: Date): Promise<PaymentRequestDoc | null> {
    const path = `items.${payerId}`;
    await this.requests.updateOne({ _id: id, [`${path}.status`]: 'PAYING' }, { $set: { [`${path}.status`]: 'PAID', [`${path}.paidAt`]: at } });
    return this.requests.findOne({ _id: id });
  }

  /** An open request all of whose items are paid becomes PAID; null when it was no longer open. */
  markPaid(id: string): Promise<PaymentRequestDoc | null> {
    return this.requests.findOneAndUpdate({ _id: id, status: 'OPEN' }, { $set: { status: 'PAID' } }, { returnDocument: 'after' });
  }

  /** Requests with items paid or being paid (the sweep looks for items a crash left PAYING). */
  withBusyItems(): Promise<PaymentRequestDoc[]> {
    return this.requests.find({ busy: { $gt: 0 } }).toArray();
  }

  /** Open requests past their time become EXPIRED; how many did. */
  async expire(now: Date): Promise<number> {
    const expired = await this.requests.updateMany({ status: 'OPEN', expiresAt: { $lte: now } }, { $set: { status: 'EXPIRED' } });
    return expired.modifiedCount;
  }
}
