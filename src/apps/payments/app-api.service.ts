import { createHash } from 'node:crypto';
import type { Decimal128 } from 'mongodb';
import { z } from 'zod';
import { IsoDateTime } from '../../platform/common.schemas.js';
import type { Clock } from '../../platform/clock.js';
import { isDuplicateKey } from '../../platform/mongo.js';
import { InsufficientFunds, type Ledger } from '../../wallets/index.js';
import { formatAmount, fromStored, parseAmount, toStored } from '../../wallets/index.js';
import type { Currency, WalletsService } from '../../wallets/index.js';
import { AppsErrors } from '../apps.errors.js';
import type { AppsService } from '../console/console.service.js';
import type { InstallsService } from '../invocations/installs.service.js';
import { seconds, TEST_WALLET, type AppPaymentsService } from './payments.service.js';
import type { AppMoneyRequestsRepo, AppPaymentDoc, MoneyRequestDoc } from './payments.repo.js';
import { must } from '../../platform/must.js';

export const IdempotencyKeyHeader = z.string().min(8).max(128).regex(/^[A-Za-z0-9_.:-]+$/, 'letters, digits and _ . : -');
export const RefundRequestSchema = z.object({ amount: z.string().max(40).optional().describe('A decimal string; the whole remaining amount when absent') }).strict().meta({ id: 'RefundRequest' });
export const PayoutRequestSchema = z
  .object({ userId: z.string().min(1).max(64).describe('The member, by the id this app knows them by'), amount: z.string().max(40), currency: z.enum(['ETH', 'USDT']) })
  .strict()
  .meta({ id: 'PayoutRequest' });
export const MoneyResultSchema = z
  .object({
    id: z.string().describe('The idempotency key'),
    kind: z.enum(['REFUND', 'PAYOUT']),
    paymentId: z.string().nullable(),
    userId: z.string().nullable(),
    amount: z.string(),
    currency: z.enum(['ETH', 'USDT']),
    status: z.enum(['DONE', 'FAILED', 'PENDING']),
    test: z.boolean().describe('Made with a test payments key: test money, nothing moved'),
    createdAt: IsoDateTime,
  })
  .meta({ id: 'MoneyMovementDto' });
export const AppApiPaymentSchema = z
  .object({
    id: z.string(),
    kind: z.literal('charge'),
    status: z.string(),
    amount: z.string(),
    refunded: z.string(),
    currency: z.enum(['ETH', 'USDT']),
    reference: z.string(),
    description: z.string(),
    test: z.boolean().describe('A test payment: seen only with a test payments key'),
    userId: z.string().describe('The payer, by the id this app knows them by'),
    createdAt: z.number().int().describe('Seconds since 1970'),
    completedAt: z.number().int().nullable(),
  })
  .meta({ id: 'AppApiPayment' });
export const BalanceSchema = z
  .object({ balances: z.array(z.object({ currency: z.enum(['ETH', 'USDT']), available: z.string() })), test: z.boolean().describe('The test balance (a test payments key): test payments in, less test refunds and payouts') })
  .meta({ id: 'AppBalance' });

/** The app a payments key opens, and whether it is a test key. */
export interface AppKey {
  appId: string;
  test: boolean;
}

const testOf = (key: AppKey) => (key.test ? { test: true } : {});
/** A test request's fingerprint differs from a live one's (a key used in both modes is refused as reused); a live one's is as before test keys. */
const modeOf = (key: AppKey) => (key.test ? ['test'] : []);

const fingerprintOf = (...parts: unknown[]) => createHash('sha256').update(JSON.stringify(parts)).digest('base64url');

/**
 * The payments interface (`/app-api/v1`, a payments key `bpk_…`): an app looks up its payments,
 * refunds one fully or in part, and pays members out of its balance. Every movement is idempotent by
 * the app's key (a repeat returns the first result; the same key with other fields is refused) and is
 * one ledger entry under that key, so a retry after a lost answer finishes what was started and never
 * moves money twice. A refund first takes its amount from what is left to refund, by a conditional
 * update, so refunds together never exceed the payment.
 */
export class AppApiService {
  constructor(
    private readonly requests: AppMoneyRequestsRepo,
    private readonly deps: {
      apps: Pick<AppsService, 'verifyCredential'>;
      payments: AppPaymentsService;
      installs: InstallsService;
      wallets: Pick<WalletsService, 'primaryWallet'>;
      ledger: Ledger;
      /** The app's balance account in a currency, when it has one. */
      accountOf: (accountId: string) => Promise<{ available: Decimal128 } | null>;
      /** Tells the member money came from the app (a device event, pushed when offline). */
      tellMember: (userId: string, event: { appId: string; kind: 'REFUND' | 'PAYOUT'; paymentId: string | null; walletId: string | null; currency: string; amount: string; test: boolean }) => Promise<void>;
      clock: Clock;
    },
  ) {}

  /** The app a presented `bpk_…` key stands for (a test key's `test` set: it sees and makes test money only), or 401. */
  async authenticate(authorization: string | undefined): Promise<AppKey> {
    const presented = /^Bearer (\S+)$/.exec(authorization ?? '')?.[1];
    const credential = presented ? await this.deps.apps.verifyCredential(presented, 'PAYMENT_KEY') : null;
    if (!credential) throw AppsErrors.PAYMENT_KEY_INVALID();
    return { appId: credential.appId, test: credential.test === true };
  }

  private present(doc: AppPaymentDoc) {
    const amount = fromStored(doc.amount);
    const refundable = fromStored(doc.refundable ?? doc.amount);
    return {
      id: doc._id,
      kind: doc.kind,
      status: doc.status.toLowerCase(),
      amount: formatAmount(amount, doc.currency),
      refunded: formatAmount(doc.status === 'COMPLETED' ? amount - refundable : 0n, doc.currency),
      currency: doc.currency,
      reference: doc.reference,
      description: doc.description,
      test: doc.test === true,
      userId: doc.appUserId,
      // `!`: seconds() is null only for a null date; createdAt never is.
      createdAt: seconds(doc.createdAt)!,
      completedAt: seconds(doc.completedAt),
    };
  }

  /** The app's payment, in the key's mode (a live key sees no test payment, a test key no live one). */
  private async paymentOf(key: AppKey, lookup: { paymentId?: string; reference?: string }): Promise<AppPaymentDoc> {
    const doc = await this.deps.payments.repo.findOfApp(key.appId, lookup);
    if (!doc || (doc.test === true) !== key.test) throw AppsErrors.APP_PAYMENT_NOT_FOUND({ message: key.test ? 'No such test payment of this app (a test key sees test payments only)' : 'No such payment of this app' });
    return doc;
  }

  async payment(key: AppKey, lookup: { paymentId?: string; reference?: string }) {
    return this.present(await this.paymentOf(key, lookup));
  }

  /** The app's test balance by currency: its completed test payments less their refunds, less its test payouts (two reads). */
  private async testBalances(appId: string): Promise<Map<Currency, bigint>> {
    const [income, payouts] = await Promise.all([this.deps.payments.repo.testIncomeOf(appId), this.requests.testPayoutsOf(appId)]);
    return new Map((['ETH', 'USDT'] as const).map((currency) => [currency, (income.get(currency) ?? 0n) - (payouts.get(currency) ?? 0n)]));
  }

  async balance(key: AppKey) {
    if (key.test) {
      const balances = await this.testBalances(key.appId);
      return { balances: [...balances].map(([currency, available]) => ({ currency, available: formatAmount(available, currency) })), test: true };
    }
    const accounts = await Promise.all((['ETH', 'USDT'] as const).map(async (currency) => ({ currency, account: await this.deps.accountOf(`app:${key.appId}:${currency}`) })));
    return { balances: accounts.map(({ currency, account }) => ({ currency, available: formatAmount(account ? fromStored(account.available) : 0n, currency) })), test: false };
  }

  async refund(key: AppKey, paymentId: string, idempotencyKey: string, input: z.infer<typeof RefundRequestSchema>) {
    const appId = key.appId;
    const payment = await this.paymentOf(key, { paymentId });
    if (payment.status !== 'COMPLETED' || !payment.walletId) throw AppsErrors.PAYMENT_NOT_REFUNDABLE();
    const remaining = fromStored(payment.refundable ?? payment.amount);
    const amount = input.amount === undefined ? remaining : parseAmount(input.amount, payment.currency);
    if (amount === null || amount <= 0n) throw AppsErrors.AMOUNT_INVALID_FOR_APP();
    const doc = await this.begin({ _id: `${appId}:REFUND:${idempotencyKey}`, appId, kind: 'REFUND', ...testOf(key), fingerprint: fingerprintOf(paymentId, input.amount ?? 'all', ...modeOf(key)), paymentId, userId: payment.userId, appUserId: payment.appUserId, walletId: payment.walletId, currency: payment.currency, amount: toStored(amount) });
    if (doc.status !== 'PENDING') return this.result(doc);
    if (!doc.taken) {
      // What is left to refund goes down first, conditionally: refunds together never pass the payment.
      if (!(await this.deps.payments.repo.takeRefundable(paymentId, amount))) return this.fail(doc, 'REFUND_EXCEEDS_PAYMENT');
      await this.requests.markTaken(doc._id);
    }
    return this.move(doc, `app-refund:${doc._id}`, async () => {
      await this.deps.payments.repo.giveBackRefundable(paymentId, amount);
    });
  }

  async payout(key: AppKey, idempotencyKey: string, input: z.infer<typeof PayoutRequestSchema>) {
    const appId = key.appId;
    const currency = input.currency;
    const amount = parseAmount(input.amount, currency);
    if (amount === null || amount <= 0n) throw AppsErrors.AMOUNT_INVALID_FOR_APP();
    const identity = await this.deps.installs.installs.activeMemberIdentity(appId, input.userId);
    if (!identity) throw AppsErrors.APP_MEMBER_NOT_FOUND();
    // A test payout goes to no wallet: the member needs none.
    const wallet = key.test ? null : await this.deps.wallets.primaryWallet(identity.userId, currency);
    if (!key.test && !wallet) throw AppsErrors.APP_MEMBER_HAS_NO_WALLET();
    const doc = await this.begin({ _id: `${appId}:PAYOUT:${idempotencyKey}`, appId, kind: 'PAYOUT', ...testOf(key), fingerprint: fingerprintOf(input.userId, input.amount, currency, ...modeOf(key)), paymentId: null, userId: identity.userId, appUserId: input.userId, walletId: wallet?._id ?? TEST_WALLET, currency, amount: toStored(amount) });
    if (doc.status !== 'PENDING') return this.result(doc);
    // The test balance bounds test payouts as the real one does real ones (checked, not held: two at once may both pass).
    if (key.test && ((await this.testBalances(appId)).get(currency) ?? 0n) < amount) return this.fail(doc, 'APP_BALANCE_SHORT');
    return this.move(doc, `app-payout:${doc._id}`, async () => undefined);
  }

  /** Records the request under its key, or finds the one recorded before (400 when it asked something else). */
  private async begin(fields: Omit<MoneyRequestDoc, 'status' | 'failure' | 'taken' | 'createdAt'>): Promise<MoneyRequestDoc> {
    const doc: MoneyRequestDoc = { ...fields, status: 'PENDING', failure: null, taken: false, createdAt: this.deps.clock() };
    try {
      await this.requests.insert(doc);
      return doc;
    } catch (error) {
      if (!isDuplicateKey(error)) throw error;
      const earlier = must(await this.requests.findById(doc._id), 'the request under this key');
      if (earlier.fingerprint !== doc.fingerprint) throw AppsErrors.APP_IDEMPOTENCY_KEY_REUSED();
      return earlier;
    }
  }

  /**
   * One ledger entry from the app's balance to the member's wallet, under the request's key; `giveBack`
   * when the balance is short. A test request moves nothing: it is done.
   */
  private async move(doc: MoneyRequestDoc, entryId: string, giveBack: () => Promise<void>) {
    const { ledger } = this.deps;
    if (!doc.test) {
      const appAccount = await ledger.ensureAppAccount(doc.appId, doc.currency);
      try {
        await ledger.post({ id: entryId, kind: 'PAYMENT', currency: doc.currency, amount: fromStored(doc.amount), debit: appAccount, credit: doc.walletId, fingerprint: doc._id, memo: { userId: doc.userId ?? undefined, note: doc.kind === 'REFUND' ? `refund of ${doc.paymentId}` : 'payout' } });
      } catch (error) {
        if (!(error instanceof InsufficientFunds)) throw error;
        await giveBack();
        return this.fail(doc, 'APP_BALANCE_SHORT');
      }
    }
    const done = must(await this.requests.markDone(doc._id), 'the request being finished');
    // The member hears of it once the money moved (a retry of a request already done returns before `move`).
    const test = doc.test === true;
    if (doc.userId) await this.deps.tellMember(doc.userId, { appId: doc.appId, kind: doc.kind, paymentId: doc.paymentId, walletId: test ? null : doc.walletId, currency: doc.currency, amount: formatAmount(fromStored(doc.amount), doc.currency), test });
    return this.result(done);
  }

  private async fail(doc: MoneyRequestDoc, failure: 'REFUND_EXCEEDS_PAYMENT' | 'APP_BALANCE_SHORT'): Promise<never> {
    await this.requests.markFailed(doc._id, failure);
    throw failure === 'REFUND_EXCEEDS_PAYMENT' ? AppsErrors.REFUND_EXCEEDS_PAYMENT() : AppsErrors.APP_BALANCE_SHORT();
  }

  private result(doc: MoneyRequestDoc) {
    if (doc.status === 'FAILED') throw doc.failure === 'REFUND_EXCEEDS_PAYMENT' ? AppsErrors.REFUND_EXCEEDS_PAYMENT() : AppsErrors.APP_BALANCE_SHORT();
    const key = doc._id.split(':').slice(2).join(':');
    return { id: key, kind: doc.kind, paymentId: doc.paymentId, userId: doc.appUserId, amount: formatAmount(fromStored(doc.amount), doc.currency), currency: doc.currency, status: doc.status, test: doc.test === true, createdAt: doc.createdAt.toISOString() };
  }
}
