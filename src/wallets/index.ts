import type { BiometricService } from '../devices/index.js';
import type { DeviceEvents } from '../platform/device-events.js';
import type { Platform } from '../platform/platform.js';
import type { UserReads } from '../users/index.js';
import { EvmChain } from './chain.js';
import { LEDGER_GRACE_MS, Ledger } from './ledger.js';
import { LedgerRepo } from './ledger.repo.js';
import { StaticPriceSource, guarded, type PriceSource } from './prices.js';
import { CoinGeckoPriceSource } from './coingecko.prices.js';
import { Reconciler } from './reconciler.js';
import { WalletClosing } from './wallet-closing.js';
import { TransfersService } from './transfers.service.js';
import { WalletsService } from './wallets.service.js';
import { WithdrawalsService } from './withdrawals.service.js';
import { WithdrawalsRepo } from './withdrawals.repo.js';
import { DepositsService } from './deposits.service.js';
import { ChainCursorsRepo } from './chain-cursors.repo.js';
import { SwapsService } from './swaps.service.js';
import { SwapsRepo } from './swaps.repo.js';
import { PaymentRequestsService } from './payment-requests.service.js';
import { PaymentRequestsRepo } from './payment-requests.repo.js';
import { LimitsService } from './limits.service.js';
import { LimitRequestsRepo } from './limits.repo.js';
import type { DeviceReads } from '../devices/index.js';
import { RedisLock } from '../platform/lock.js';
import { AdminAuditRepo } from '../platform/admin-audit.repo.js';
import { QUEUES } from '../platform/queues.js';
import { formatAmount, fromStored, parseAmount, type Currency } from './money.js';
import { must } from '../platform/must.js';

/** Custodial wallets over an EVM chain: a double-entry ledger, transfers between members, rates (docs/clients/wallets.md). */
export function walletsArea(
  p: Platform,
  deps: { users: UserReads; devices: DeviceReads; biometric: BiometricService; events: DeviceEvents; isSiteAdmin: (userId: string) => Promise<boolean> },
) {
  const repo = new LedgerRepo(p.db);
  const withdrawalsRepo = new WithdrawalsRepo(p.db);
  const limitsRepo = new LimitRequestsRepo(p.db);
  const swapsRepo = new SwapsRepo(p.db);
  const paymentRequestsRepo = new PaymentRequestsRepo(p.db);
  const chain = new EvmChain({ rpcUrl: p.config.EVM_RPC_URL, depositMnemonic: p.config.DEPOSIT_MNEMONIC, hotWalletKey: p.config.HOT_WALLET_PRIVATE_KEY, usdtAddress: p.config.USDT_TOKEN_ADDRESS, timeoutMs: p.config.EVM_RPC_TIMEOUT_MS });
  const ledger = new Ledger({ repo, clock: p.clock, logger: p.logger });
  // A wallet's view shows what it has on its way out: its unfinished withdrawals.
  const wallets = new WalletsService({ repo, chain, clock: p.clock, heldOf: (ids) => withdrawalsRepo.heldOf(ids), ephemeral: p.ephemeral, slotKey: (userId) => p.keys.slots('wallets', userId) });
  const prices: PriceSource = guarded(
    p.config.PRICE_SOURCE === 'coingecko'
      ? new CoinGeckoPriceSource({ baseUrl: p.config.COINGECKO_BASE_URL, ...(p.config.COINGECKO_API_KEY ? { apiKey: p.config.COINGECKO_API_KEY } : {}), cacheSeconds: 30, staleSeconds: 300 })
      : new StaticPriceSource(p.config.WALLET_STATIC_ETH_USDT),
    (error) => p.logger.warn({ err: error }, 'the price source failed'),
  );
  const lock = new RedisLock(p.redis);
  const units = (text: string, currency: Currency) => (/^0+(\.0+)?$/.test(text) ? 0n : must(parseAmount(text, currency), `the configured amount ${text}`));
  const limits = new LimitsService(limitsRepo, {
    devices: deps.devices,
    biometric: deps.biometric,
    events: deps.events,
    isSiteAdmin: deps.isSiteAdmin,
    audit: new AdminAuditRepo(p.db),
    baseLimits: { ETH: units(p.config.WALLET_DAILY_LIMIT_ETH, 'ETH'), USDT: units(p.config.WALLET_DAILY_LIMIT_USDT, 'USDT') },
    deviceWaitSeconds: p.config.LIMIT_REQUEST_DEVICE_WAIT,
    clock: p.clock,
  });
  const withdrawals = new WithdrawalsService(withdrawalsRepo, {
    ledger,
    wallets,
    chain,
    biometric: deps.biometric,
    events: deps.events,
    withHotWallet: (fn) => lock.with(p.keys.wallets.hotWalletLock, fn, { ttlSeconds: 10, waitMs: 60_000 }),
    enqueueSend: (withdrawalId) => p.queues.add(QUEUES.withdrawals, { withdrawalId }),
    fees: { ETH: units(p.config.WITHDRAWAL_FEE_ETH, 'ETH'), USDT: units(p.config.WITHDRAWAL_FEE_USDT, 'USDT') },
    limitOf: (userId, currency) => limits.limitOf(userId, currency),
    confirmations: p.config.DEPOSIT_CONFIRMATIONS,
    resendAfterMs: p.config.WITHDRAWAL_RESEND_AFTER * 1000,
    clock: p.clock,
    logger: p.logger,
  });
  const swaps = new SwapsService(swapsRepo, {
    ledger,
    wallets,
    biometric: deps.biometric,
    prices,
    feeBps: BigInt(p.config.SWAP_FEE_BPS),
    quoteTtlSeconds: p.config.SWAP_QUOTE_TTL,
    houseLiquidity: { ETH: units(p.config.HOUSE_LIQUIDITY_ETH, 'ETH'), USDT: units(p.config.HOUSE_LIQUIDITY_USDT, 'USDT') },
    clock: p.clock,
  });
  const paymentRequests = new PaymentRequestsService(paymentRequestsRepo, { ledger, wallets, users: deps.users, biometric: deps.biometric, events: deps.events, ttlSeconds: p.config.PAYMENT_REQUEST_TTL, clock: p.clock });
  const deposits = new DepositsService(new ChainCursorsRepo(p.db), { repo, ledger, chain, events: deps.events, confirmations: p.config.DEPOSIT_CONFIRMATIONS, clock: p.clock, logger: p.logger });
  return {
    repos: { ledger: repo, withdrawals: withdrawalsRepo, swaps: swapsRepo, paymentRequests: paymentRequestsRepo, limits: limitsRepo },
    ledger,
    limits,
    deposits,
    swaps,
    paymentRequests,
    wallets,
    withdrawals,
    transfers: new TransfersService({ repo, ledger, wallets, users: deps.users, biometric: deps.biometric, events: deps.events }),
    /** The member's wallets with their history, for their data export. */
    exportOf: async (userId: string) =>
      Promise.all(
        (await repo.walletsOf(userId)).map(async (wallet) => ({
          id: wallet._id,
          currency: wallet.currency,
          name: wallet.name,
          available: formatAmount(fromStored(wallet.available), wallet.currency),
          held: formatAmount(fromStored(wallet.held), wallet.currency),
          depositAddress: wallet.depositAddress ?? null,
          createdAt: wallet.createdAt.toISOString(),
          closedAt: wallet.closedAt?.toISOString() ?? null,
          history: (await repo.pageOfHistory(wallet._id, 100_000, 0)).items.map((entry) => ({
            entryId: entry._id,
            kind: entry.kind,
            direction: entry.debit === wallet._id ? 'OUT' : 'IN',
            amount: formatAmount(fromStored(entry.amount), entry.currency),
            state: entry.state,
            note: entry.memo.note ?? null,
            createdAt: entry.createdAt.toISOString(),
          })),
        })),
      ),
    /** Closing a member's wallets when they delete their account. */
    closing: new WalletClosing({ repo, withdrawals: withdrawalsRepo, swaps: swapsRepo, clock: p.clock }),
    reconciler: new Reconciler({ repo, ledger, chain, clock: p.clock, logger: p.logger, graceMs: LEDGER_GRACE_MS }),
    /** What an account has available (the apps area reads an app's balance). */
    balances: { availableOf: (accountId: string) => repo.availableOf(accountId) },
    rates: async () => ({ rates: await prices.rates(), source: prices.name, at: p.clock().toISOString() }),
  };
}
export type WalletsArea = ReturnType<typeof walletsArea>;

// What other areas use of this one (they import only this file).
export { InsufficientFunds } from './ledger.js';
export { hasMoved } from './ledger.repo.js';
export type { Ledger } from './ledger.js';
export { CURRENCIES, formatAmount, fromStored, parseAmount, toStored } from './money.js';
export type { Currency } from './money.js';
export type { WalletsService } from './wallets.service.js';
