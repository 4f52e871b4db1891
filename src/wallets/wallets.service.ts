import type { z } from 'zod';
import { randomUUID } from 'node:crypto';
import type { Clock } from '../platform/clock.js';
import { page, type Page } from '../platform/paging.js';
import type { Principal } from '../platform/principal.js';
import type { EvmChain } from './chain.js';
import type { AccountDoc, LedgerRepo, LineDoc } from './ledger.repo.js';
import { formatAmount, fromStored, toStored, type Currency } from './money.js';
import type { DepositAddressSchema, LedgerLineSchema, WalletDtoSchema } from './wallets.schemas.js';
import { WalletsErrors } from './wallets.errors.js';
import { must } from '../platform/must.js';

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

function presentLine(line: LineDoc): z.infer<typeof LedgerLineSchema> {
  const amount = fromStored(line.amount);
  const other = amount < 0n ? line.memo.toUserId : line.memo.fromUserId;
  return {
    id: line.journalId,
    kind: line.kind,
    amount: formatAmount(amount, line.currency),
    currency: line.currency,
    counterpartyUserId: other ?? null,
    note: line.memo.note ?? null,
    createdAt: line.createdAt.toISOString(),
  };
}

/** The name as stored: surrounding whitespace removed; 1 to 50 characters left, else 400. */
function walletName(name: string): string {
  const trimmed = name.trim();
  if (trimmed.length === 0 || trimmed.length > 50) throw WalletsErrors.WALLET_NAME_INVALID();
  return trimmed;
}

/** A member's wallet, or 400 WALLET_NOT_FOUND: the same answer for a wallet that does not exist and for another member's (rule 1). */
function ownedBy(principal: Principal, wallet: AccountDoc | null): AccountDoc {
  if (!wallet || wallet.kind !== 'WALLET' || wallet.userId !== principal.userId) throw WalletsErrors.WALLET_NOT_FOUND();
  return wallet;
}

/** The order `firstWalletOf` reads wallets in: oldest first, then by id. */
const oldestFirst = (a: AccountDoc, b: AccountDoc) => a.createdAt.getTime() - b.createdAt.getTime() || (a._id < b._id ? -1 : a._id > b._id ? 1 : 0);

/** The wallets of a transfer request (see `WalletsService.parties`). */
export interface Parties {
  owned(walletId: string): AccountDoc;
  primaryWallet(userId: string, currency: Currency): AccountDoc | null;
}

/** Members' wallets: create, list, read, rename, deposit address, history (spec, "Wallets", rule 1). */
export class WalletsService {
  constructor(
    private readonly deps: {
      repo: LedgerRepo;
      chain: EvmChain;
      clock: Clock;
      /** Amounts on their way out (withdrawals held, not yet confirmed), by wallet. */
      heldOf: (walletIds: string[]) => Promise<Map<string, bigint>>;
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
   * The wallets a request that moves money between members names, read at once: the caller's source
   * wallets (`owned`, as above) and each recipient's wallet for a currency (`primaryWallet`, as below).
   */
  async parties(principal: Principal, walletIds: string[], recipientIds: string[]): Promise<Parties> {
    const accounts = await this.deps.repo.walletsOrOwnersAmong(walletIds, recipientIds);
    return {
      owned: (walletId) => ownedBy(principal, accounts.find((account) => account._id === walletId) ?? null),
      primaryWallet: (userId, currency) => accounts.filter((account) => account.kind === 'WALLET' && account.userId === userId && account.currency === currency).sort(oldestFirst)[0] ?? null,
    };
  }

  async create(principal: Principal, input: { currency: Currency; name?: string }): Promise<WalletView> {
    const { repo, chain } = this.deps;
    if ((await repo.countWalletsOf(principal.userId)) >= MAX_WALLETS_PER_USER) throw WalletsErrors.WALLET_LIMIT_REACHED();
    const name = input.name === undefined ? input.currency : walletName(input.name);
    const depositIndex = await repo.next('deposit-address');
    const now = this.deps.clock();
    const wallet: AccountDoc = {
      _id: randomUUID(),
      kind: 'WALLET',
      currency: input.currency,
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
    await repo.insertWallet(wallet);
    return presentWallet(wallet);
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

  /** The wallet's ledger lines, newest first. */
  async history(principal: Principal, walletId: string, pageSize: number, currentPage: number): Promise<Page<z.infer<typeof LedgerLineSchema>>> {
    await this.owned(principal, walletId);
    const { items, total } = await this.deps.repo.pageOfLines(walletId, pageSize, currentPage);
    return page(items.map(presentLine), total, pageSize, currentPage);
  }

  /** The recipient's wallet for a currency: their oldest one. */
  async primaryWallet(userId: string, currency: Currency): Promise<AccountDoc | null> {
    return this.deps.repo.firstWalletOf(userId, currency);
  }
}
