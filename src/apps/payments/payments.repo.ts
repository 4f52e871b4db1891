import type { Collection, Db, Decimal128 } from 'mongodb';
import { fromStored, toStored, type Currency } from '../../wallets/index.js';
import type { Card } from '../shared/cards.js';

export type AppPaymentStatus = 'PENDING' | 'PAYING' | 'COMPLETED' | 'DECLINED' | 'EXPIRED';

/** A payment an app asked a member for in chat (a `payment` reply), and what became of it. */
export interface AppPaymentDoc {
  _id: string;
  appId: string;
  /** The payer, and the id the app knows them by. */
  userId: string;
  appUserId: string;
  invocationId: string;
  kind: 'charge';
  /** A test payment (the app was in test mode): confirming it moves no money; absent on live ones. */
  test?: boolean;
  /** `<appId>:<reference>`: an app's references are unique. */
  referenceKey: string;
  reference: string;
  description: string;
  currency: Currency;
  amount: Decimal128;
  /** What is left to refund: set to the amount when the payment completes, taken down by each refund. */
  refundable?: Decimal128;
  /** The card the app's payment reply carried: shown to the payer once the sheet is answered. */
  /** Shown once paid. */
  card: Card | null;
  /** Shown once declined or expired (absent on payments recorded before it existed). */
  declinedCard?: Card | null;
  status: AppPaymentStatus;
  walletId: string | null;
  expiresAt: Date;
  createdAt: Date;
  completedAt: Date | null;
  updatedAt: Date;
  /**
   * The outbox: the event the app is owed, set in the same update that completes, declines or expires
   * the payment, cleared once its delivery is recorded. The sweep records what a crash left here.
   */
  eventDue?: PaymentEventType | null;
}

export type PaymentEventType = 'payment.completed' | 'payment.declined' | 'payment.expired';

/**
 * In-chat payments (`app_payments`): a payment moves PENDING → PAYING → COMPLETED (or DECLINED,
 * EXPIRED, or back to PENDING) by conditional updates, and its refundable amount is taken down by one.
 */
export class AppPaymentsRepo {
  private readonly payments: Collection<AppPaymentDoc>;

  constructor(db: Db) {
    this.payments = db.collection<AppPaymentDoc>('app_payments');
  }

  async ensureIndexes(): Promise<void> {
    await this.payments.createIndexes([
      { key: { referenceKey: 1 }, name: 'reference_once', unique: true },
      { key: { status: 1, expiresAt: 1 }, name: 'open_by_expiry' },
    ]);
  }

  /** Throws the driver's duplicate-key error when the app used the reference before. */
  async insert(doc: AppPaymentDoc): Promise<void> {
    await this.payments.insertOne(doc);
  }

  findById(paymentId: string): Promise<AppPaymentDoc | null> {
    return this.payments.findOne({ _id: paymentId });
  }

  /** An app's payment by its id or by the app's reference. */
  findOfApp(appId: string, lookup: { paymentId?: string | undefined; reference?: string | undefined }): Promise<AppPaymentDoc | null> {
    return lookup.paymentId ? this.payments.findOne({ _id: lookup.paymentId, appId }) : this.payments.findOne({ referenceKey: `${appId}:${lookup.reference}` });
  }

  /** Moves a payment from `from` to `to` (with `set`), only while it has not expired when `openAt` is given; null when it was not so. */
  transition(paymentId: string, from: AppPaymentStatus, to: AppPaymentStatus, set: Partial<AppPaymentDoc>, openAt?: Date): Promise<AppPaymentDoc | null> {
    return this.payments.findOneAndUpdate({ _id: paymentId, status: from, ...(openAt ? { expiresAt: { $gt: openAt } } : {}) }, { $set: { ...set, status: to } }, { returnDocument: 'after' });
  }

  /** Payments whose event a crash left unrecorded since before `before`; at most `limit`. */
  eventsDue(before: Date, limit: number): Promise<AppPaymentDoc[]> {
    return this.payments.find({ eventDue: { $in: ['payment.completed', 'payment.declined', 'payment.expired'] }, updatedAt: { $lt: before } }).limit(limit).toArray();
  }

  /** The event's delivery is recorded: nothing is owed any more. */
  async clearEventDue(paymentId: string, event: PaymentEventType): Promise<void> {
    await this.payments.updateOne({ _id: paymentId, eventDue: event }, { $set: { eventDue: null } });
  }

  /** Open payments past their time; at most `limit`. */
  pendingExpiredAt(now: Date, limit: number): Promise<AppPaymentDoc[]> {
    return this.payments.find({ status: 'PENDING', expiresAt: { $lte: now } }).limit(limit).toArray();
  }

  /** Payments PAYING since before `before` (a crash left them between steps); at most `limit`. */
  payingSince(before: Date, limit: number): Promise<AppPaymentDoc[]> {
    return this.payments.find({ status: 'PAYING', updatedAt: { $lt: before } }).limit(limit).toArray();
  }

  /** Takes `amount` off what is left to refund, unless less is left; false then. */
  async takeRefundable(paymentId: string, amount: bigint): Promise<boolean> {
    const taken = await this.payments.updateOne({ _id: paymentId, refundable: { $gte: toStored(amount) } }, { $inc: { refundable: toStored(-amount) } });
    return taken.modifiedCount === 1;
  }

  /** Gives `amount` back to what is left to refund (a refund that did not happen). */
  async giveBackRefundable(paymentId: string, amount: bigint): Promise<void> {
    await this.payments.updateOne({ _id: paymentId }, { $inc: { refundable: toStored(amount) } });
  }

  /** Ids of a member's payments being paid (PAYING): money on its way. */
  /** The app's payments not answered yet, or being paid: money that may still move. */
  async openOfApp(appId: string): Promise<number> {
    return this.payments.countDocuments({ appId, status: { $in: ['PENDING', 'PAYING'] } });
  }

  /** What the app's completed test payments left after their refunds, by currency (its test balance's income). */
  async testIncomeOf(appId: string): Promise<Map<Currency, bigint>> {
    const docs = await this.payments.find({ appId, test: true, status: 'COMPLETED' }, { projection: { currency: 1, refundable: 1, amount: 1 } }).toArray();
    const income = new Map<Currency, bigint>();
    for (const doc of docs) income.set(doc.currency, (income.get(doc.currency) ?? 0n) + fromStored(doc.refundable ?? doc.amount));
    return income;
  }

  async payingOf(userId: string): Promise<string[]> {
    return (await this.payments.find({ userId, status: 'PAYING' }, { projection: { _id: 1 } }).toArray()).map((payment) => payment._id);
  }
}

/** A refund or a payout the app asked for, under its idempotency key (`_id` `<appId>:<kind>:<key>`). */
export interface MoneyRequestDoc {
  _id: string;
  appId: string;
  kind: 'REFUND' | 'PAYOUT';
  /** Asked with a test payments key: test money, nothing moved (absent on live requests). */
  test?: boolean;
  /** What the request asked: a repeat of the key must ask the same. */
  fingerprint: string;
  paymentId: string | null;
  userId: string | null;
  appUserId: string | null;
  walletId: string;
  currency: Currency;
  amount: Decimal128;
  status: 'PENDING' | 'DONE' | 'FAILED';
  failure: string | null;
  /** A refund's amount was taken from what is left to refund (so a retry does not take it again). */
  taken: boolean;
  createdAt: Date;
}

/** Refunds and payouts apps asked for (`app_money_requests`), one per idempotency key. */
export class AppMoneyRequestsRepo {
  private readonly requests: Collection<MoneyRequestDoc>;

  constructor(db: Db) {
    this.requests = db.collection<MoneyRequestDoc>('app_money_requests');
  }

  /** Throws the driver's duplicate-key error when the key was used before. */
  async insert(doc: MoneyRequestDoc): Promise<void> {
    await this.requests.insertOne(doc);
  }

  findById(requestId: string): Promise<MoneyRequestDoc | null> {
    return this.requests.findOne({ _id: requestId });
  }

  /** A refund's amount was taken from what is left to refund. */
  async markTaken(requestId: string): Promise<void> {
    await this.requests.updateOne({ _id: requestId }, { $set: { taken: true } });
  }

  markDone(requestId: string): Promise<MoneyRequestDoc | null> {
    return this.requests.findOneAndUpdate({ _id: requestId }, { $set: { status: 'DONE', failure: null } }, { returnDocument: 'after' });
  }

  async markFailed(requestId: string, failure: string): Promise<void> {
    await this.requests.updateOne({ _id: requestId }, { $set: { status: 'FAILED', failure } });
  }

  /** What the app's test payouts took from its test balance, by currency. */
  async testPayoutsOf(appId: string): Promise<Map<Currency, bigint>> {
    const docs = await this.requests.find({ appId, test: true, kind: 'PAYOUT', status: 'DONE' }, { projection: { currency: 1, amount: 1 } }).toArray();
    const out = new Map<Currency, bigint>();
    for (const doc of docs) out.set(doc.currency, (out.get(doc.currency) ?? 0n) + fromStored(doc.amount));
    return out;
  }
}
