import type { BiometricService } from '../devices/biometric.service.js';
import type { DeviceEvents } from '../platform/device-events.js';
import type { Platform } from '../platform/platform.js';
import type { UsersRepo } from '../users/users.repo.js';
import { EvmChain } from './chain.js';
import { Ledger } from './ledger.js';
import { LedgerRepo } from './ledger.repo.js';
import { StaticPriceSource } from './prices.js';
import { Reconciler } from './reconciler.js';
import { TransfersService } from './transfers.service.js';
import { WalletsService } from './wallets.service.js';

/** Custodial wallets over an EVM chain: a double-entry ledger, transfers between members, rates (README, "Wallets"). */
export function walletsArea(p: Platform, deps: { users: UsersRepo; biometric: BiometricService; events: DeviceEvents }) {
  const repo = new LedgerRepo(p.db);
  const chain = new EvmChain({ rpcUrl: p.config.EVM_RPC_URL, depositMnemonic: p.config.DEPOSIT_MNEMONIC });
  const ledger = new Ledger({ repo, clock: p.clock, logger: p.logger });
  const wallets = new WalletsService({ repo, chain, clock: p.clock });
  const prices = new StaticPriceSource(p.config.WALLET_STATIC_ETH_USDT);
  return {
    repos: { ledger: repo },
    wallets,
    transfers: new TransfersService({ repo, ledger, wallets, users: deps.users, biometric: deps.biometric, events: deps.events }),
    reconciler: new Reconciler({ repo, ledger, clock: p.clock, logger: p.logger, graceMs: 30_000 }),
    rates: async () => ({ rates: await prices.rates(), source: prices.name, at: p.clock().toISOString() }),
  };
}
export type WalletsArea = ReturnType<typeof walletsArea>;
