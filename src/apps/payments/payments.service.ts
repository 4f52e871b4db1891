import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { IsoDateTime } from '../../platform/common.schemas.js';
import type { BiometricService } from '../../devices/index.js';
import type { Clock } from '../../platform/clock.js';
import type { CrashAt } from '../../platform/crash-points.js';
import { isDuplicateKey } from '../../platform/mongo.js';
import type { Principal } from '../../platform/principal.js';
import { hasMoved, InsufficientFunds, type Ledger } from '../../wallets/index.js';
import { CURRENCIES, formatAmount, fromStored, parseAmount, toStored } from '../../wallets/index.js';
import { WalletsErrors } from '../../wallets/wallets.errors.js';
import type { WalletsService } from '../../wallets/index.js';
import { AppsErrors } from '../apps.errors.js';
import { CardSchema, ReplySchema, type Reply } from '../shared/cards.js';
import { BiometricConfirmationSchema } from '../../wallets/wallets.schemas.js';
import type { WebhooksService } from '../delivery/webhooks.service.js';
import type { AppPaymentDoc, AppPaymentsRepo, PaymentEventType } from './payments.repo.js';
import { must } from '../../platform/must.js';

export const AppPaymentDtoSchema = z
  .object({
    id: z.string(),
    appId: z.string(),
    amount: z.string().describe('A decimal string'),
    currency: z.enum(['ETH', 'USDT']),
    reference: z.string(),
    description: z.string(),
    status: z.enum(['PENDING', 'PAYING', 'COMPLETED', 'DECLINED', 'EXPIRED']),
    expiresAt: IsoDateTime,
    createdAt: IsoDateTime,
    completedAt: IsoDateTime.nullable(),
    card: CardSchema.nullable().describe('What the app shows once the sheet is answered: its card for a payment made, its declinedCard for one declined or expired (null while open, or when it gave none)'),
    test: z.boolean().describe('A test payment (the app is in test mode): confirming it moves no money, from no wallet; show it marked as a test'),
  })
  .meta({ id: 'AppPaymentDto' });
export type AppPaymentView = z.infer<typeof AppPaymentDtoSchema>;

export const AppPaymentConfirmSchema = z
  .object({
    walletId: z.string().min(1).max(64).optional().describe('The wallet paid from, of the payment\'s currency: required, but for a test payment (none: a test wallet, nothing moves)'),
    biometric: BiometricConfirmationSchema.nullish().describe('Required when the device has a biometric key: over BIOMETRIC_CONFIRM_V1|<nonce>|APP_PAYMENT|<paymentId>|<walletId>|<amount> (walletId `test` for a test payment confirmed without one)'),
  })
  .strict()
  .meta({ id: 'AppPaymentConfirmRequest' });

export const AppPaymentResultSchema = z
  .object({
    payment: AppPaymentDtoSchema,
    reply: z
      .object({ outcome: z.enum(['card', 'ack', 'error']), card: CardSchema.nullable(), message: z.string().nullable(), userMessage: z.string().nullable() })
      .meta({ id: 'AppPaymentReply' })
      .nullable()
      .describe('What the app answered payment.completed with, when its first delivery brought an answer in time'),
  })
  .meta({ id: 'AppPaymentResult' });

/** A payment event's delivery id: one per payment and event, so recording it twice records it once. */
export const eventDeliveryId = (doc: Pick<AppPaymentDoc, '_id'>, event: PaymentEventType) => `${doc._id}-${event.slice('payment.'.length)}`;

/** How long an owed event may wait for its delivery to be recorded before the sweep records it. */
const EVENT_GRACE_MS = 30_000;

/** The wallet a test payment confirmed without one is recorded as paid from: none (nothing moves). */
export const TEST_WALLET = 'test';

export const paymentSigned = (nonce: string, paymentId: string, walletId: string, amount: string) => `BIOMETRIC_CONFIRM_V1|${nonce}|APP_PAYMENT|${paymentId}|${walletId}|${amount}`;

/** Seconds since 1970, as payment bodies carry times. */
export const seconds = (date: Date | null) => (date === null ? null : Math.floor(date.getTime() / 1000));

/**
 * In-chat payments (spec, "Webhook replies" and "Payment event body"): an app's `payment` reply opens
 * a payment sheet for the member; confirming it from a wallet of that currency (with the biometric
 * confirmation when the device has a key) moves ledger money from the wallet to the app's balance,
 * once (the entry's key is the payment's id); declining or letting it expire moves nothing. Each end
 * is sent to the app as a payment event, retried on the schedule with one delivery id; the first
 * `payment.completed` attempt is made while the payer waits, and its reply (a private card, an ack or
 * an error) is shown to them.
 */
export class AppPaymentsService {
  constructor(
    readonly repo: AppPaymentsRepo,
    private readonly deps: {
      ledger: Ledger;
      wallets: Pick<WalletsService, 'owned'>;
      biometric: Pick<BiometricService, 'confirmAction'>;
      webhooks: Pick<WebhooksService, 'sendNow' | 'enqueue' | 'sweepOverdue'>;
      clock: Clock;
      crashAt: CrashAt;
    },
  ) {}

  present(doc: AppPaymentDoc): AppPaymentView {
    return {
      id: doc._id,
      appId: doc.appId,
      amount: formatAmount(fromStored(doc.amount), doc.currency),
      currency: doc.currency,
      reference: doc.reference,
      description: doc.description,
      status: doc.status,
      expiresAt: doc.expiresAt.toISOString(),
      createdAt: doc.createdAt.toISOString(),
      completedAt: doc.completedAt?.toISOString() ?? null,
      // The card waits for the answer, and follows it: the paid card, or the declined one.
      card: doc.status === 'COMPLETED' ? doc.card : doc.status === 'DECLINED' || doc.status === 'EXPIRED' ? (doc.declinedCard ?? null) : null,
      test: doc.test === true,
    };
  }

  /**
   * Opens the payment sheet an app's `payment` reply asks for, or says why the reply cannot be honoured
   * (an amount out of bounds, a reference used before): the app's activity row records it.
   */
  async open(input: { appId: string; userId: string; appUserId: string; invocationId: string; test: boolean; payment: Extract<Reply, { type: 'payment' }>['payment'] }): Promise<{ opened: AppPaymentDoc } | { refused: string }> {
    const currency = input.payment.currency;
    const amount = parseAmount(input.payment.amount, currency);
    if (amount === null) return { refused: amountProblem(input.payment.amount, currency) };
    const now = this.deps.clock();
    const doc: AppPaymentDoc = {
      _id: randomUUID(),
      appId: input.appId,
      userId: input.userId,
      appUserId: input.appUserId,
      invocationId: input.invocationId,
      kind: 'charge',
      ...(input.test ? { test: true } : {}),
      referenceKey: `${input.appId}:${input.payment.reference}`,
      reference: input.payment.reference,
      description: input.payment.description,
      currency,
      amount: toStored(amount),
      status: 'PENDING',
      walletId: null,
      card: input.payment.card ?? null,
      declinedCard: input.payment.declinedCard ?? null,
      expiresAt: new Date(now.getTime() + input.payment.expiresIn * 1000),
      createdAt: now,
      completedAt: null,
      updatedAt: now,
    };
    try {
      await this.repo.insert(doc);
    } catch (error) {
      if (isDuplicateKey(error)) return { refused: `payment.reference: "${input.payment.reference}" was used by an earlier payment of this app` };
      throw error;
    }
    return { opened: doc };
  }

  async get(principal: Principal, paymentId: string): Promise<AppPaymentView> {
    return this.present(await this.payersOwn(principal, paymentId));
  }

  private async payersOwn(principal: Principal, paymentId: string): Promise<AppPaymentDoc> {
    const doc = await this.repo.findById(paymentId);
    if (!doc || doc.userId !== principal.userId) throw AppsErrors.APP_PAYMENT_NOT_FOUND();
    return doc;
  }

  async confirm(principal: Principal, paymentId: string, input: z.infer<typeof AppPaymentConfirmSchema>): Promise<z.infer<typeof AppPaymentResultSchema>> {
    const doc = await this.payersOwn(principal, paymentId);
    const now = this.deps.clock();
    if (doc.status !== 'PENDING' || doc.expiresAt <= now) throw AppsErrors.APP_PAYMENT_CLOSED();
    const test = doc.test === true;
    if (input.walletId === undefined && !test) throw AppsErrors.APP_PAYMENT_WALLET_REQUIRED();
    const wallet = input.walletId === undefined ? null : await this.deps.wallets.owned(principal, input.walletId);
    if (wallet && wallet.currency !== doc.currency) throw AppsErrors.APP_PAYMENT_CURRENCY();
    const amount = fromStored(doc.amount);
    await this.deps.biometric.confirmAction(principal, input.biometric, (nonce) => paymentSigned(nonce, paymentId, input.walletId ?? TEST_WALLET, formatAmount(amount, doc.currency)));
    // A test payment is paid from no balance: nothing moves.
    if (wallet && !test && fromStored(wallet.available) < amount) throw WalletsErrors.INSUFFICIENT_FUNDS();

    // Claimed first (so a decline or the expiry cannot slip in), then the money moves once, by the payment's key.
    const claimed = await this.repo.transition(paymentId, 'PENDING', 'PAYING', { walletId: wallet?._id ?? TEST_WALLET, updatedAt: now }, now);
    if (!claimed) throw AppsErrors.APP_PAYMENT_CLOSED();
    if (!test) {
      try {
        await this.move(claimed);
      } catch (error) {
        if (!(error instanceof InsufficientFunds)) throw error;
        await this.repo.transition(paymentId, 'PAYING', 'PENDING', { walletId: null, updatedAt: this.deps.clock() });
        throw WalletsErrors.INSUFFICIENT_FUNDS();
      }
    }
    const completed = await this.complete(claimed);
    this.deps.crashAt('app-payment.changed');
    const { reply } = await this.deps.webhooks.sendNow(completed.appId, 'payment.completed', this.eventBody(completed, 'payment.completed'), { retry: true, deliveryId: eventDeliveryId(completed, 'payment.completed') });
    await this.repo.clearEventDue(completed._id, 'payment.completed');
    return { payment: this.present(completed), reply: this.shownReply(reply) };
  }

  async decline(principal: Principal, paymentId: string): Promise<AppPaymentView> {
    await this.payersOwn(principal, paymentId);
    const now = this.deps.clock();
    const declined = await this.repo.transition(paymentId, 'PENDING', 'DECLINED', { updatedAt: now, eventDue: 'payment.declined' }, now);
    if (!declined) throw AppsErrors.APP_PAYMENT_CLOSED();
    this.deps.crashAt('app-payment.changed');
    await this.queueEvent(declined, 'payment.declined');
    return this.present(declined);
  }

  /**
   * The scheduled sweep: open payments past their time expire (the app is told); a payment a crash left
   * PAYING for a minute is finished from its ledger entry (completed if the money moved, open again if not).
   */
  async sweep(): Promise<{ expired: number; finished: number; eventsRecorded: number; deliveriesRearmed: number }> {
    const now = this.deps.clock();
    let expired = 0;
    for (const doc of await this.repo.pendingExpiredAt(now, 500)) {
      const done = await this.repo.transition(doc._id, 'PENDING', 'EXPIRED', { updatedAt: now, eventDue: 'payment.expired' });
      if (!done) continue;
      await this.queueEvent(done, 'payment.expired');
      expired++;
    }
    // The outbox: events a crash left owed (the payment changed, its delivery not recorded yet).
    let eventsRecorded = 0;
    for (const doc of await this.repo.eventsDue(new Date(now.getTime() - EVENT_GRACE_MS), 500)) {
      if (!doc.eventDue) continue;
      await this.queueEvent(doc, doc.eventDue);
      eventsRecorded++;
    }
    // Deliveries whose job was lost (a worker that died mid-attempt) are armed again.
    const deliveriesRearmed = await this.deps.webhooks.sweepOverdue();
    let finished = 0;
    for (const doc of await this.repo.payingSince(new Date(now.getTime() - 60_000), 500)) {
      // A test payment moves nothing: claimed, it is paid.
      const entry = doc.test ? null : await this.deps.ledger.entry(`app-payment:${doc._id}`);
      if (doc.test || (entry && hasMoved(entry))) {
        const completed = await this.complete(doc);
        await this.queueEvent(completed, 'payment.completed');
      } else if (!entry || entry.state === 'FAILED') {
        await this.repo.transition(doc._id, 'PAYING', 'PENDING', { walletId: null, updatedAt: now });
      }
      finished++;
    }
    return { expired, finished, eventsRecorded, deliveriesRearmed };
  }

  /** Records the payment's event for delivery (once: its delivery id is the payment's and the event's), then clears what was owed. */
  private async queueEvent(doc: AppPaymentDoc, event: PaymentEventType): Promise<void> {
    await this.deps.webhooks.enqueue(doc.appId, event, this.eventBody(doc, event), { retry: true, deliveryId: eventDeliveryId(doc, event) });
    await this.repo.clearEventDue(doc._id, event);
  }

  private async move(doc: AppPaymentDoc): Promise<void> {
    const { ledger } = this.deps;
    const appAccount = await ledger.ensureAppAccount(doc.appId, doc.currency);
    await ledger.post({
      id: `app-payment:${doc._id}`,
      kind: 'PAYMENT',
      currency: doc.currency,
      amount: fromStored(doc.amount),
      debit: must(doc.walletId, 'the paying wallet'),
      credit: appAccount,
      fingerprint: doc._id,
      memo: { userId: doc.userId, note: `${doc.reference}: ${doc.description}` },
    });
  }

  private async complete(doc: AppPaymentDoc): Promise<AppPaymentDoc> {
    const now = this.deps.clock();
    return (
      (await this.repo.transition(doc._id, 'PAYING', 'COMPLETED', { completedAt: now, refundable: doc.amount, updatedAt: now, eventDue: 'payment.completed' })) ??
      must(await this.repo.findById(doc._id), 'the payment')
    );
  }

  /** The spec's payment event body; the same every time it is made for one payment and event (a re-record after a crash). */
  eventBody(doc: AppPaymentDoc, type: PaymentEventType) {
    return {
      type,
      id: `evt_${eventDeliveryId(doc, type)}`,
      ts: seconds(doc.updatedAt),
      app: { id: doc.appId },
      payment: {
        id: doc._id,
        kind: doc.kind,
        status: doc.status.toLowerCase(),
        amount: formatAmount(fromStored(doc.amount), doc.currency),
        currency: doc.currency,
        reference: doc.reference,
        description: doc.description,
        createdAt: seconds(doc.createdAt),
        completedAt: seconds(doc.completedAt),
        // Only on test payments: a live payment's body is the spec's, field for field.
        ...(doc.test ? { test: true } : {}),
      },
      user: { id: doc.appUserId },
    };
  }

  /** A reply to payment.completed the payer is shown: a private card, an ack or an error; anything else is not shown. */
  private shownReply(reply: unknown): z.infer<typeof AppPaymentResultSchema>['reply'] {
    const parsed = ReplySchema.safeParse(reply);
    if (!parsed.success) return null;
    const answer = parsed.data;
    // A template needs the app's manifest; a reply to a payment event sends its card inline.
    if (answer.type === 'card') return answer.card ? { outcome: 'card', card: answer.card, message: null, userMessage: null } : null;
    if (answer.type === 'ack') return { outcome: 'ack', card: null, message: answer.message, userMessage: null };
    if (answer.type === 'error') return { outcome: 'error', card: null, message: null, userMessage: answer.userMessage };
    return null;
  }
}

/** Why an amount an app asked for cannot be charged (parseAmount refused it). */
function amountProblem(amount: string, currency: keyof typeof CURRENCIES): string {
  const { decimals } = CURRENCIES[currency];
  const fraction = amount.split('.')[1] ?? '';
  if (fraction.length > decimals) return `payment.amount: ${amount} has more decimals than ${currency} has (${decimals})`;
  return `payment.amount: ${amount} is not an amount more than 0 (a decimal string such as "12.50")`;
}
