import { createPublicClient, http, type PublicClient } from 'viem';
import { mnemonicToAccount } from 'viem/accounts';

/**
 * The chain as the wallets see it, over EVM JSON-RPC (viem): the development chain (Hardhat's network,
 * started by the stack scripts) or any EVM network's RPC in production.
 */
export class EvmChain {
  private readonly client: PublicClient;
  private chainIdCache: number | null = null;

  constructor(private readonly options: { rpcUrl: string; depositMnemonic: string }) {
    this.client = createPublicClient({ transport: http(options.rpcUrl, { retryCount: 1, timeout: 10_000 }) });
  }

  async chainId(): Promise<number> {
    this.chainIdCache ??= await this.client.getChainId();
    return this.chainIdCache;
  }

  /**
   * The deposit address at `index`: BIP-44 path m/44'/60'/1'/0/index of the deposit mnemonic (account 1,
   * so it never meets the development chain's funded accounts, which are account 0's).
   */
  depositAddress(index: number): string {
    return mnemonicToAccount(this.options.depositMnemonic, { accountIndex: 1, addressIndex: index }).address;
  }
}
