import type { z } from 'zod';
import { randomUUID } from 'node:crypto';
import type { Clock } from '../platform/clock.js';
import { page, type Page } from '../platform/paging.js';
import type { Principal } from '../platform/principal.js';
import type { EvmChain } from './chain.js';
import type { AccountDoc, JournalDoc, LedgerRepo } from './ledger.repo.js';
import { TtlCache } from '../platform/cache/ttl-cache.js';
import { formatAmount, fromStored, toStored, type Currency } from './money.js';
import type { DepositAddressSchema, LedgerLineSchema, WalletDtoSchema } from './wallets.schemas.js';
import { WalletsErrors } from './wallets.errors.js';
import { must } from '../platform/must.js';
import type { EphemeralStore } from '../platform/ephemeral.js';
import { withinLimit } from '../platform/limits.js';

export type WalletView = z.infer<typeof WalletDtoSchema>;
export const MAX_WALLETS_PER_USER = 20;

export function presentWallet(wallet: AccountDoc, onItsWayOut = 0n): WalletView {
  const available = fromStored(wallet.available);
  const held = fromStored(wallet.held) + onItsWayOut;
  return {
    id: wallet._id,
    currency: wallet.currency,
    name: wallet.name ?? wallet.currency,
    balance: formatAmount(available + held, wallet.currency),
    available: formatAmount(available, wallet.currency),
    createdAt: wallet.createdAt.toISOString(),
  };
}

/** An entry as a line of one of its accounts' history: negative when it left that account. */
function presentLine(accountId: string, entry: JournalDoc): z.infer<typeof LedgerLineSchema> {
  const left = entry.debit === accountId;
  const amount = fromStored(entry.amount);
  const other = left ? entry.memo.toUserId : entry.memo.fromUserId;
  return {
    id: entry._id,
    kind: entry.kind,
    amount: formatAmount(left ? -amount : amount, entry.currency),
    currency: entry.currency,
    counterpartyUserId: other ?? null,
    note: entry.memo.note ?? null,
    createdAt: entry.createdAt.toISOString(),
  };
}

/** The name as stored: surrounding whitespace removed; 1 to 50 characters left, else 400. */
function walletName(name: string): string {
  const trimmed = name.trim();
  if (trimmed.length === 0 || trimmed.length > 50) throw WalletsErrors.WALLET_NAME_INVALID();
  return trimmed;
}

/** A member's wallet, or 400 WALLET_NOT_FOUND: the same answer for a wallet that does not exist and for another member's (rule 1). */
function ownedBy<W extends WalletFacts>(principal: Principal, wallet: W | null): W {
  if (!wallet || wallet.kind !== 'WALLET' || wallet.userId !== principal.userId) throw WalletsErrors.WALLET_NOT_FOUND();
  return wallet;
}

const factsOf = ({ _id, kind, userId, currency, createdAt }: AccountDoc): WalletFacts => ({ _id, kind, userId, currency, createdAt });

/** The order `firstWalletOf` reads wallets in: oldest first, then by id. */
const oldestFirst = (a: AccountDoc, b: AccountDoc) => a.createdAt.getTime() - b.createdAt.getTime() || (a._id < b._id ? -1 : a._id > b._id ? 1 : 0);

/** What never changes of a wallet once it exists: whose it is, its currency, when it was made. */
export type WalletFacts = Pick<AccountDoc, '_id' | 'kind' | 'userId' | 'currency' | 'createdAt'>;

/** The wallets of a transfer request (see `WalletsService.parties`). */
export interface Parties {
  owned(walletId: string): WalletFacts;
  primaryWallet(userId: string, currency: Currency): WalletFacts | null;
}

/**
 * How long this process keeps a wallet's facts and a member's first wallet of a currency. Neither
 * changes (wallets are never deleted or given to another member, and a wallet made later sorts after
 * the first; two made in the same millisecond are both the member's), so no write clears them: the
 * time only bounds the memory, with `WALLET_FACTS_KEPT`.
 */
const WALLET_FACTS_MS = 10 * 60_000;
const WALLET_FACTS_KEPT = 20_000;

/** Members' wallets: create, list, read, rename, deposit address, history (spec, "Wallets", rule 1). */
export class WalletsService {
  constructor(
    private readonly deps: {
      repo: LedgerRepo;
      chain: EvmChain;
      clock: Clock;
      /** Amounts on their way out (withdrawals held, not yet confirmed), by wallet. */
      heldOf: (walletIds: string[]) => Promise<Map<string, bigint>>;
      /** Where creations under way hold their slots of the wallet limit. */
      ephemeral: EphemeralStore;
      slotKey: (userId: string) => string;
    },
  ) {}

  private async present(wallets: AccountDoc[]): Promise<WalletView[]> {
    const held = await this.deps.heldOf(wallets.map((w) => w._id));
    return wallets.map((w) => presentWallet(w, held.get(w._id) ?? 0n));
  }

  /**
   * The caller's wallet, or 400 WALLET_NOT_FOUND: the same answer for a wallet that does not exist
   * and for another member's (rule 1).
   */
  async owned(principal: Principal, walletId: string): Promise<AccountDoc> {
    return ownedBy(principal, await this.deps.repo.findAccount(walletId));
  }

  /**
   * The wallets a request that moves money between members names: the caller's source wallets
   * (`owned`, as above) and each recipient's wallet for a currency (`primaryWallet`, as below). What
   * never changes of them is kept (`WALLET_FACTS_MS`): when every one is known, nothing is read; else
   * all are read at once.
   */
  async parties(principal: Principal, walletIds: string[], recipientIds: string[]): Promise<Parties> {
    const known = (): Parties | null => {
      const sources = walletIds.map((id) => this.walletFacts.peek(id));
      if (sources.some((wallet) => wallet === undefined)) return null;
      const currencies = new Set(sources.map((wallet) => must(wallet, 'a known wallet').currency));
      if (recipientIds.some((userId) => [...currencies].some((currency) => this.firstWallets.peek(`${userId}:${currency}`) === undefined))) return null;
      return {
        owned: (walletId) => ownedBy(principal, this.walletFacts.peek(walletId) ?? null),
        primaryWallet: (userId, currency) => this.firstWallets.peek(`${userId}:${currency}`) ?? null,
      };
    };
    const cached = known();
    if (cached) return cached;
    const accounts = await this.deps.repo.walletsOrOwnersAmong(walletIds, recipientIds);
    const primaryWallet = (userId: string, currency: Currency) =>
      accounts.filter((account) => account.kind === 'WALLET' && account.userId === userId && account.currency === currency && !account.closedAt).sort(oldestFirst)[0] ?? null;
    for (const account of accounts) {
      this.walletFacts.set(account._id, factsOf(account));
      if (account.kind === 'WALLET' && account.userId !== null && recipientIds.includes(account.userId)) {
        this.firstWallets.set(`${account.userId}:${account.currency}`, factsOf(must(primaryWallet(account.userId, account.currency), 'a member\'s first wallet')));
      }
    }
    return {
      owned: (walletId) => ownedBy(principal, accounts.find((account) => account._id === walletId) ?? null),
      primaryWallet,
    };
  }

  /** Wallets' facts by id, and members' first wallet of a currency by `<userId>:<currency>` (see `parties`). */
  private readonly walletFacts = new TtlCache<WalletFacts>(WALLET_FACTS_MS, WALLET_FACTS_KEPT);
  private readonly firstWallets = new TtlCache<WalletFacts>(WALLET_FACTS_MS, WALLET_FACTS_KEPT);

  async create(principal: Principal, input: { currency: Currency; name?: string }): Promise<WalletView> {
    const { repo } = this.deps;
    const name = input.name === undefined ? input.currency : walletName(input.name);
    // At most MAX_WALLETS_PER_USER, concurrent creations included (each holds a slot while it runs).
    return withinLimit(
      this.deps.ephemeral,
      this.deps.slotKey(principal.userId),
      { limit: MAX_WALLETS_PER_USER, settled: () => repo.countWalletsOf(principal.userId), refuse: () => WalletsErrors.WALLET_LIMIT_REACHED() },
      () => this.insertWallet(principal, input.currency, name),
    );
  }

  private async insertWallet(principal: Principal, currency: Currency, name: string): Promise<WalletView> {
    const { repo, chain } = this.deps;
    const now = this.deps.clock();
    // The deposit address's unique index is the guard: an index another wallet took (a counter that
    // answered two creations alike under load, as mongo-java-server's was seen to) is skipped for the next.
    for (let attempt = 1; ; attempt++) {
      const depositIndex = await repo.next('deposit-address');
      const wallet: AccountDoc = {
        _id: randomUUID(),
        kind: 'WALLET',
        currency,
        userId: principal.userId,
        name,
        available: toStored(0n),
        held: toStored(0n),
        pending: [],
        overdraft: false,
        depositIndex,
        depositAddress: chain.depositAddress(depositIndex).toLowerCase(),
        createdAt: now,
        updatedAt: now,
      };
      if (await repo.insertWallet(wallet)) return presentWallet(wallet);
      if (attempt === 5) throw new Error('wallets: five deposit addresses in a row were taken');
    }
  }

  /** The caller's wallets, oldest first. */
  async list(principal: Principal): Promise<WalletView[]> {
    return this.present(await this.deps.repo.walletsOf(principal.userId));
  }

  async get(principal: Principal, walletId: string): Promise<WalletView> {
    return must((await this.present([await this.owned(principal, walletId)]))[0], 'the wallet\'s view');
  }

  async rename(principal: Principal, walletId: string, name: string): Promise<WalletView> {
    await this.owned(principal, walletId);
    const renamed = await this.deps.repo.rename(walletId, walletName(name), this.deps.clock());
    return must((await this.present([must(renamed, 'the wallet just renamed')]))[0], 'the wallet\'s view');
  }

  async depositAddress(principal: Principal, walletId: string): Promise<z.infer<typeof DepositAddressSchema>> {
    const wallet = await this.owned(principal, walletId);
    return { network: `eip155:${await this.deps.chain.chainId()}`, currency: wallet.currency, address: must(wallet.depositAddress, 'a wallet\'s deposit address') };
  }

  /** The wallet's history: its entries that moved money, newest first. */
  async history(principal: Principal, walletId: string, pageSize: number, currentPage: number): Promise<Page<z.infer<typeof LedgerLineSchema>>> {
    await this.owned(principal, walletId);
    const { items, total } = await this.deps.repo.pageOfHistory(walletId, pageSize, currentPage);
    return page(items.map((entry) => presentLine(walletId, entry)), total, pageSize, currentPage);
  }

  /** The recipient's wallet for a currency: their oldest one. */
  async primaryWallet(userId: string, currency: Currency): Promise<AccountDoc | null> {
    return this.deps.repo.firstWalletOf(userId, currency);
  }
}
