import type { z } from 'zod';
import { randomUUID } from 'node:crypto';
import type { BiometricService } from '../devices/index.js';
import type { Clock } from '../platform/clock.js';
import type { DeviceEvents } from '../platform/device-events.js';
import { page, type Page } from '../platform/paging.js';
import type { Principal } from '../platform/principal.js';
import type { UserReads } from '../users/index.js';
import { AccountClosed, InsufficientFunds, type Ledger } from './ledger.js';
import { hasMoved, type JournalDoc } from './ledger.repo.js';
import { formatAmount, fromStored, parseAmount, toStored } from './money.js';
import type { PaymentRequestCreateSchema, PaymentRequestDtoSchema } from './wallets.schemas.js';
import { WalletsErrors } from './wallets.errors.js';
import type { WalletsService } from './wallets.service.js';
import type { PaymentRequestDoc, PaymentRequestsRepo } from './payment-requests.repo.js';
import { must } from '../platform/must.js';

export type PaymentRequestView = z.infer<typeof PaymentRequestDtoSchema>;

/** What the device signs to pay an item (docs/clients/wallets.md). */
export const paySigned = (nonce: string, paymentRequestId: string, walletId: string) => `BIOMETRIC_CONFIRM_V1|${nonce}|PAY|${paymentRequestId}|${walletId}`;

const paymentEntryId = (requestId: string, payerId: string) => `payment:${requestId}:${payerId}`;

/**
 * Payment requests (spec, "Wallets", rule 7): a member asks others to pay amounts into one of their
 * wallets, one item per recipient. Recipients are told, and pay their own item from a wallet of the
 * request's currency (biometric when their device has a key): the item is claimed first (PAYING), so
 * a cancel cannot slip in, then one ledger entry keyed by request and payer moves the money, then the
 * item is PAID. Cancel: the owner of the target wallet, only while no item is paid or being paid.
 * Open requests past `expiresAt` become EXPIRED; items a crash left PAYING are settled by the sweep
 * from their ledger entry.
 */
export class PaymentRequestsService {
  constructor(
    private readonly repo: PaymentRequestsRepo,
    private readonly deps: {
      ledger: Ledger;
      wallets: WalletsService;
      users: UserReads;
      biometric: BiometricService;
      events: DeviceEvents;
      ttlSeconds: number;
      clock: Clock;
    },
  ) {}

  private present(doc: PaymentRequestDoc, viewerId: string): PaymentRequestView {
    return {
      id: doc._id,
      requesterId: doc.requesterId,
      walletId: viewerId === doc.requesterId ? doc.walletId : null,
      currency: doc.currency,
      note: doc.note,
      status: doc.status === 'OPEN' && doc.expiresAt <= this.deps.clock() ? 'EXPIRED' : doc.status,
      items: doc.recipientIds.map((recipientId) => {
        const item = must(doc.items[recipientId], 'a recipient\'s item');
        return { recipientId, amount: formatAmount(fromStored(item.amount), doc.currency), status: item.status, paidAt: item.paidAt?.toISOString() ?? null };
      }),
      createdAt: doc.createdAt.toISOString(),
      expiresAt: doc.expiresAt.toISOString(),
    };
  }

  async create(principal: Principal, input: z.infer<typeof PaymentRequestCreateSchema>): Promise<PaymentRequestView> {
    const wallet = await this.deps.wallets.owned(principal, input.walletId);
    const recipients = input.items.map((item) => item.recipientId);
    if (new Set(recipients).size !== recipients.length || recipients.includes(principal.userId)) throw WalletsErrors.PAYMENT_RECIPIENT_INVALID();
    if ((await this.deps.users.findManyByIds(recipients)).filter((user) => !user.deletedAt).length !== recipients.length) throw WalletsErrors.PAYMENT_RECIPIENT_INVALID({ message: 'A recipient is not a member' });
    const items: PaymentRequestDoc['items'] = {};
    for (const item of input.items) {
      const units = parseAmount(item.amount, wallet.currency);
      if (units === null) throw WalletsErrors.AMOUNT_INVALID();
      items[item.recipientId] = { amount: toStored(units), status: 'OPEN', paidAt: null, claimedAt: null };
    }
    const now = this.deps.clock();
    const doc: PaymentRequestDoc = {
      _id: randomUUID(),
      requesterId: principal.userId,
      walletId: wallet._id,
      currency: wallet.currency,
      note: input.note ?? null,
      status: 'OPEN',
      items,
      recipientIds: recipients,
      busy: 0,
      createdAt: now,
      expiresAt: new Date(now.getTime() + this.deps.ttlSeconds * 1000),
    };
    await this.repo.insert(doc);
    for (const recipientId of doc.recipientIds) {
      await this.deps.events.toUsers([recipientId], 'wallet.payment-requested', {
        paymentRequestId: doc._id,
        requesterId: principal.userId,
        currency: doc.currency,
        amount: formatAmount(fromStored(must(doc.items[recipientId], 'a recipient\'s item').amount), doc.currency),
        note: doc.note,
      });
    }
    return this.present(doc, principal.userId);
  }

  async list(principal: Principal, role: 'outgoing' | 'incoming', pageSize: number, currentPage: number): Promise<Page<PaymentRequestView>> {
    const { items, total } = await this.repo.pageOf(principal.userId, role, pageSize, currentPage);
    return page(items.map((doc) => this.present(doc, principal.userId)), total, pageSize, currentPage);
  }

  /** The request, for its requester or one of its recipients; else the same 400 as none. */
  private async visible(principal: Principal, id: string): Promise<PaymentRequestDoc> {
    const doc = await this.repo.findById(id);
    if (!doc || (doc.requesterId !== principal.userId && !doc.recipientIds.includes(principal.userId))) throw WalletsErrors.PAYMENT_REQUEST_NOT_FOUND();
    return doc;
  }

  async cancel(principal: Principal, id: string): Promise<PaymentRequestView> {
    const doc = await this.visible(principal, id);
    // The owner of the target wallet only: someone else's request is as good as none.
    if (doc.requesterId !== principal.userId) throw WalletsErrors.PAYMENT_REQUEST_NOT_FOUND();
    await this.deps.wallets.owned(principal, doc.walletId);
    const cancelled = await this.repo.cancelIfIdle(id);
    if (cancelled) return this.present(cancelled, principal.userId);
    const current = must(await this.repo.findById(id), 'the request');
    if (current.busy > 0) throw WalletsErrors.PAYMENT_REQUEST_HAS_PAYMENTS();
    throw WalletsErrors.PAYMENT_REQUEST_CLOSED();
  }

  async pay(principal: Principal, id: string, input: { walletId: string; biometric?: { nonce: string; signature: string } | null }): Promise<PaymentRequestView> {
    const doc = await this.visible(principal, id);
    const item = doc.items[principal.userId];
    if (!item || item.status !== 'OPEN') throw WalletsErrors.PAYMENT_ITEM_NOT_OPEN();
    if (doc.status !== 'OPEN' || doc.expiresAt <= this.deps.clock()) throw WalletsErrors.PAYMENT_REQUEST_CLOSED();
    const from = await this.deps.wallets.owned(principal, input.walletId);
    if (from.currency !== doc.currency) throw WalletsErrors.CURRENCY_MISMATCH();
    await this.deps.biometric.confirmAction(principal, input.biometric, (nonce) => paySigned(nonce, id, input.walletId));
    if (fromStored(from.available) < fromStored(item.amount)) throw WalletsErrors.INSUFFICIENT_FUNDS();
    // Claim the item: from here a cancel is refused, and a second pay finds it taken.
    const now = this.deps.clock();
    if (!(await this.repo.claimItem(id, principal.userId, now))) throw WalletsErrors.PAYMENT_ITEM_NOT_OPEN({ message: 'The item is being paid, or the request closed meanwhile' });
    let entry: JournalDoc;
    try {
      entry = await this.deps.ledger.post({
        id: paymentEntryId(id, principal.userId),
        kind: 'PAYMENT',
        currency: doc.currency,
        amount: fromStored(item.amount),
        debit: from._id,
        credit: doc.walletId,
        fingerprint: `${from._id}:${fromStored(item.amount)}`,
        memo: { userId: principal.userId, fromUserId: principal.userId, toUserId: doc.requesterId, note: doc.note },
      });
    } catch (error) {
      await this.release(id, principal.userId);
      if (error instanceof InsufficientFunds) throw WalletsErrors.INSUFFICIENT_FUNDS();
      if (error instanceof AccountClosed) throw WalletsErrors.PAYMENT_REQUEST_NOT_FOUND({ message: 'The requester deleted their account' });
      throw error;
    }
    const paid = await this.markPaid(id, principal.userId, entry.createdAt);
    await this.deps.events.toUsers([doc.requesterId], 'wallet.payment-request-paid', {
      paymentRequestId: id,
      payerId: principal.userId,
      amount: formatAmount(fromStored(item.amount), doc.currency),
      currency: doc.currency,
      status: paid.status,
    });
    return this.present(paid, principal.userId);
  }

  /** An item whose payment did not happen goes back to OPEN. */
  private async release(id: string, payerId: string): Promise<void> {
    await this.repo.releaseItem(id, payerId);
  }

  private async markPaid(id: string, payerId: string, at: Date): Promise<PaymentRequestDoc> {
    const doc = must(await this.repo.markItemPaid(id, payerId, at), 'the request');
    if (Object.values(doc.items).every((item) => item.status === 'PAID')) return (await this.repo.markPaid(id)) ?? doc;
    return doc;
  }

  /** Expires open requests past their time; settles items a crash left PAYING from their ledger entry. */
  async sweep(): Promise<{ expired: number; settled: number }> {
    const now = this.deps.clock();
    const stuck = new Date(now.getTime() - 60_000);
    let settled = 0;
    for (const doc of await this.repo.withBusyItems()) {
      for (const [recipientId, item] of Object.entries(doc.items)) {
        if (item.status !== 'PAYING' || !item.claimedAt || item.claimedAt >= stuck) continue;
        const entry = await this.deps.ledger.entry(paymentEntryId(doc._id, recipientId));
        if (entry && hasMoved(entry)) await this.markPaid(doc._id, recipientId, entry.createdAt);
        else if (!entry || entry.state === 'FAILED') await this.release(doc._id, recipientId);
        else continue;
        settled++;
      }
    }
    // An item claimed before the end is still paid (markPaid does not look at the request's status).
    return { expired: await this.repo.expire(now), settled };
  }
}
