import type { z } from 'zod';
import { randomUUID } from 'node:crypto';
import type { BiometricService } from '../devices/index.js';
import type { Clock } from '../platform/clock.js';
import { page, type Page } from '../platform/paging.js';
import type { Principal } from '../platform/principal.js';
import { isDuplicateKey } from '../platform/mongo.js';
import { InsufficientFunds, type Ledger } from './ledger.js';
import { CURRENCIES, formatAmount, fromStored, parseAmount, toStored, type Currency } from './money.js';
import type { PriceSource } from './prices.js';
import type { SwapDtoSchema, SwapQuoteDtoSchema } from './wallets.schemas.js';
import { WalletsErrors } from './wallets.errors.js';
import type { WalletsService } from './wallets.service.js';
import type { QuoteDoc, SwapDoc, SwapsRepo } from './swaps.repo.js';
import { must } from '../platform/must.js';

export type SwapQuoteView = z.infer<typeof SwapQuoteDtoSchema>;
export type SwapView = z.infer<typeof SwapDtoSchema>;

/** What the device signs for a swap (docs/clients/wallets.md). */
export const swapSigned = (nonce: string, quoteId: string) => `BIOMETRIC_CONFIRM_V1|${nonce}|SWAP|${quoteId}`;

const PRICE_SCALE = 10n ** 18n;

/** A decimal price string as an integer scaled by 10^18 (integer arithmetic only). */
function scaledPrice(price: string): bigint {
  const [whole = '0', fraction = ''] = price.split('.');
  return BigInt(whole) * PRICE_SCALE + BigInt(fraction.slice(0, 18).padEnd(18, '0'));
}

/** What `units` of `from` buy of `to` at `price` (to per from), rounded down to `to`'s smallest unit. */
export function convert(units: bigint, from: Currency, to: Currency, price: string): bigint {
  return (units * scaledPrice(price) * 10n ** BigInt(CURRENCIES[to].decimals)) / (PRICE_SCALE * 10n ** BigInt(CURRENCIES[from].decimals));
}

function presentQuote(q: QuoteDoc): SwapQuoteView {
  return {
    id: q._id,
    fromWalletId: q.fromWalletId,
    toWalletId: q.toWalletId,
    fromCurrency: q.fromCurrency,
    toCurrency: q.toCurrency,
    amount: formatAmount(fromStored(q.amount), q.fromCurrency),
    price: q.price,
    fee: formatAmount(fromStored(q.fee), q.fromCurrency),
    receiveAmount: formatAmount(fromStored(q.receive), q.toCurrency),
    expiresAt: q.expiresAt.toISOString(),
  };
}

function presentSwap(s: SwapDoc): SwapView {
  return {
    id: s._id,
    quoteId: s.quoteId,
    status: s.status,
    fromWalletId: s.fromWalletId,
    toWalletId: s.toWalletId,
    fromCurrency: s.fromCurrency,
    toCurrency: s.toCurrency,
    amount: formatAmount(fromStored(s.amount), s.fromCurrency),
    price: s.price,
    fee: formatAmount(fromStored(s.fee), s.fromCurrency),
    receiveAmount: formatAmount(fromStored(s.receive), s.toCurrency),
    createdAt: s.createdAt.toISOString(),
    completedAt: s.completedAt?.toISOString() ?? null,
  };
}

/**
 * Swaps between a member's wallets of two currencies, against the house (spec, "Wallets", rules 4 and
 * 5). A quote fixes price, fee and what is received until `expiresAt`, and debits nothing. Executing
 * checks the biometric confirmation and the balance first, then takes the quote (once), then moves
 * the amount to the house in one currency and the received amount from the house in the other, at the
 * quoted price. When the house is short of the target currency the swap is PENDING and the sweep
 * credits it when the house can. Every step is a ledger entry keyed by the swap, so nothing runs twice.
 */
export class SwapsService {
  /** Currencies whose starting liquidity this process has seen put in. */
  private readonly seeded = new Set<Currency>();

  constructor(
    private readonly repo: SwapsRepo,
    private readonly deps: {
      ledger: Ledger;
      wallets: WalletsService;
      biometric: BiometricService;
      prices: PriceSource;
      feeBps: bigint;
      quoteTtlSeconds: number;
      houseLiquidity: Record<Currency, bigint>;
      clock: Clock;
    },
  ) {}

  async quote(principal: Principal, input: { fromWalletId: string; toWalletId: string; amount: string }): Promise<SwapQuoteView> {
    const { wallets, prices } = this.deps;
    const [from, to] = [await wallets.owned(principal, input.fromWalletId), await wallets.owned(principal, input.toWalletId)];
    if (from.currency === to.currency) throw WalletsErrors.SWAP_SAME_CURRENCY();
    const amount = parseAmount(input.amount, from.currency);
    if (amount === null) throw WalletsErrors.AMOUNT_INVALID();
    const rate = (await prices.rates()).find((r) => r.from === from.currency && r.to === to.currency);
    if (!rate) throw WalletsErrors.SWAP_SAME_CURRENCY({ message: `No price for ${from.currency} to ${to.currency}` });
    const fee = (amount * this.deps.feeBps + 9_999n) / 10_000n;
    const receive = convert(amount - fee, from.currency, to.currency, rate.rate);
    if (receive <= 0n) throw WalletsErrors.SWAP_TOO_SMALL();
    const now = this.deps.clock();
    const quote: QuoteDoc = {
      _id: randomUUID(),
      userId: principal.userId,
      fromWalletId: from._id,
      toWalletId: to._id,
      fromCurrency: from.currency,
      toCurrency: to.currency,
      amount: toStored(amount),
      fee: toStored(fee),
      price: rate.rate,
      receive: toStored(receive),
      expiresAt: new Date(now.getTime() + this.deps.quoteTtlSeconds * 1000),
      acceptedAt: null,
      createdAt: now,
    };
    await this.repo.insertQuote(quote);
    return presentQuote(quote);
  }

  async execute(principal: Principal, input: { quoteId: string; biometric?: { nonce: string; signature: string } | null }): Promise<SwapView> {
    const quote = await this.repo.findQuote(input.quoteId);
    if (!quote || quote.userId !== principal.userId) throw WalletsErrors.QUOTE_NOT_FOUND();
    await this.deps.biometric.confirmAction(principal, input.biometric, (nonce) => swapSigned(nonce, quote._id));
    const from = await this.deps.wallets.owned(principal, quote.fromWalletId);
    if (fromStored(from.available) < fromStored(quote.amount)) throw WalletsErrors.INSUFFICIENT_FUNDS();
    const now = this.deps.clock();
    if (quote.acceptedAt) throw WalletsErrors.QUOTE_ALREADY_USED();
    if (quote.expiresAt <= now) throw WalletsErrors.QUOTE_EXPIRED();
    const taken = await this.repo.takeQuote(quote._id, now);
    if (!taken) {
      const current = await this.repo.findQuote(quote._id);
      throw current?.acceptedAt ? WalletsErrors.QUOTE_ALREADY_USED() : WalletsErrors.QUOTE_EXPIRED();
    }
    const { acceptedAt: _acceptedAt, expiresAt: _expiresAt, ...quoted } = quote;
    const swap: SwapDoc = { ...quoted, _id: randomUUID(), quoteId: quote._id, status: 'PENDING', completedAt: null, createdAt: now };
    try {
      await this.repo.insertSwap(swap);
    } catch (error) {
      if (!isDuplicateKey(error)) throw error;
      throw WalletsErrors.QUOTE_ALREADY_USED();
    }
    // The member pays first: when that fails (spent meanwhile), nothing moved and the swap failed.
    const house = await this.house(quote.fromCurrency);
    try {
      await this.deps.ledger.post({
        id: `swap-pay:${swap._id}`,
        kind: 'SWAP',
        currency: quote.fromCurrency,
        amount: fromStored(quote.amount),
        debit: quote.fromWalletId,
        credit: house,
        fingerprint: swap._id,
        memo: { userId: principal.userId, note: `swap to ${quote.toCurrency}` },
      });
    } catch (error) {
      if (!(error instanceof InsufficientFunds)) throw error;
      await this.repo.markFailed(swap._id);
      throw WalletsErrors.INSUFFICIENT_FUNDS();
    }
    return presentSwap(await this.fill(swap));
  }

  /** The house pays the member, when it has the target currency; else the swap stays PENDING for the sweep. */
  private async fill(swap: SwapDoc): Promise<SwapDoc> {
    const house = await this.house(swap.toCurrency);
    const id = `swap-receive:${swap._id}`;
    // A later try of a fill the house could not pay: the same entry, tried again.
    const retried = await this.deps.ledger.retryFailed(id);
    if (retried && retried.state !== 'DONE') return swap;
    try {
      await this.deps.ledger.post({
        id,
        kind: 'SWAP',
        currency: swap.toCurrency,
        amount: fromStored(swap.receive),
        debit: house,
        credit: swap.toWalletId,
        fingerprint: swap._id,
        memo: { userId: swap.userId, note: `swap from ${swap.fromCurrency}` },
      });
    } catch (error) {
      if (!(error instanceof InsufficientFunds)) throw error;
      return swap;
    }
    return (await this.repo.complete(swap._id, this.deps.clock())) ?? must(await this.repo.findSwap(swap._id), 'the swap');
  }

  /** The sweep: pending swaps the house can now fill (their pay step done). */
  async fillPending(): Promise<number> {
    let filled = 0;
    for (const swap of await this.repo.pendingBefore(new Date(this.deps.clock().getTime() - 2_000))) {
      if ((await this.fill(swap)).status === 'COMPLETED') filled++;
    }
    return filled;
  }

  async list(principal: Principal, walletId: string, pageSize: number, currentPage: number): Promise<Page<SwapView>> {
    await this.deps.wallets.owned(principal, walletId);
    const { items, total } = await this.repo.pageOfWallet(walletId, pageSize, currentPage);
    return page(items.map(presentSwap), total, pageSize, currentPage);
  }

  /** The house's account in a currency, with its starting liquidity put in once (an entry from the chain's account). */
  private async house(currency: Currency): Promise<string> {
    const { ledger } = this.deps;
    const [house, chain] = await Promise.all([ledger.ensureSystemAccount('house', currency), ledger.ensureSystemAccount('chain', currency)]);
    const seed = this.deps.houseLiquidity[currency];
    if (seed > 0n && !this.seeded.has(currency)) {
      await ledger.post({ id: `house-liquidity:${currency}`, kind: 'ADJUSTMENT', currency, amount: seed, debit: chain, credit: house, fingerprint: String(seed), memo: { note: 'the house\'s starting liquidity' } });
      this.seeded.add(currency);
    }
    return house;
  }
}
