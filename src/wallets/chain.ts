import {
  BaseError,
  HttpRequestError,
  TimeoutError,
  TransactionNotFoundError,
  TransactionReceiptNotFoundError,
  createPublicClient,
  createWalletClient,
  encodeFunctionData,
  http,
  getAddress,
  isAddress,
  keccak256,
  parseAbi,
  parseAbiItem,
  type Hex,
  type PublicClient,
} from 'viem';
import { mnemonicToAccount, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import type { Currency } from './money.js';

const ERC20 = parseAbi(['function transfer(address to, uint256 value) returns (bool)', 'function balanceOf(address) view returns (uint256)']);

const TRANSFER_EVENT = parseAbiItem('event Transfer(address indexed from, address indexed to, uint256 value)');

/** Money that arrived at an address on chain. */
export interface ChainPayment {
  currency: Currency;
  to: string;
  units: bigint;
  txHash: string;
  index: number;
  blockNumber: bigint;
}

export interface SignedTransfer {
  raw: Hex;
  hash: Hex;
  nonce: number;
}

/** What the chain says of a transaction: unknown, waiting in its pool, or mined (with success or revert). */
export type TransferState = { state: 'UNKNOWN' } | { state: 'PENDING' } | { state: 'MINED'; success: boolean; confirmations: number };

/**
 * True when the chain's node did not answer (refused connection, timeout, no HTTP answer), as opposed
 * to answering with an error. A caller must not read "no answer" as "refused": a transaction whose
 * broadcast got no answer may still be mined.
 */
export function isUnreachable(error: unknown): boolean {
  if (!(error instanceof BaseError)) return false;
  // An HTTP answer of 408, 429 or a gateway's 5xx is no answer from the node either; a JSON-RPC error is one.
  const noAnswer = (cause: unknown) =>
    cause instanceof TimeoutError || (cause instanceof HttpRequestError && (cause.status === undefined || [408, 429, 502, 503, 504].includes(cause.status)));
  return error.walk(noAnswer) !== null;
}

/**
 * The chain as the wallets see it, over EVM JSON-RPC (viem): the development chain (Hardhat's network,
 * started by the stack scripts) or any EVM network's RPC in production. The hot wallet signs
 * withdrawals with explicit nonces, so a signed transaction can be stored before it is broadcast and
 * broadcast again after a crash without ever paying twice (the same bytes have the same hash).
 */
export class EvmChain {
  private readonly client: PublicClient;
  private readonly hot: PrivateKeyAccount;
  private chainIdCache: number | null = null;

  constructor(private readonly options: { rpcUrl: string; depositMnemonic: string; hotWalletKey: Hex; usdtAddress: string | undefined; timeoutMs?: number }) {
    this.client = createPublicClient({ transport: http(options.rpcUrl, { retryCount: 1, timeout: options.timeoutMs ?? 10_000 }) });
    this.hot = privateKeyToAccount(options.hotWalletKey);
  }

  get hotWalletAddress(): string {
    return this.hot.address;
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

  static isValidAddress(address: string): boolean {
    return isAddress(address, { strict: false }) && !/^0x0{40}$/i.test(address);
  }

  /** The hot wallet's next nonce as the chain counts it (its pending transactions included). */
  async chainNonce(): Promise<number> {
    return this.client.getTransactionCount({ address: this.hot.address, blockTag: 'pending' });
  }

  /** Signs a payment from the hot wallet; nothing is sent. Throws when the chain refuses to estimate it (e.g. too little in the hot wallet). */
  async signTransfer(input: { currency: Currency; to: string; units: bigint; nonce: number }): Promise<SignedTransfer> {
    const to = getAddress(input.to);
    const call =
      input.currency === 'ETH'
        ? { to, value: input.units, data: undefined }
        : { to: this.token(), value: 0n, data: encodeFunctionData({ abi: ERC20, functionName: 'transfer', args: [to, input.units] }) };
    const [gas, fees, chainId] = await Promise.all([
      this.client.estimateGas({ account: this.hot.address, to: call.to, value: call.value, ...(call.data ? { data: call.data } : {}) }),
      this.client.estimateFeesPerGas(),
      this.chainId(),
    ]);
    const raw = await createWalletClient({ account: this.hot, transport: http(this.options.rpcUrl) }).signTransaction({
      account: this.hot,
      chain: null,
      chainId,
      to: call.to,
      value: call.value,
      ...(call.data ? { data: call.data } : {}),
      nonce: input.nonce,
      gas: (gas * 12n) / 10n,
      maxFeePerGas: fees.maxFeePerGas,
      maxPriorityFeePerGas: fees.maxPriorityFeePerGas,
      type: 'eip1559',
    });
    return { raw, hash: keccak256(raw), nonce: input.nonce };
  }

  /** Broadcasts a signed transaction; true when the chain has it (now or from before), false when it refuses it. */
  async broadcast(raw: Hex, hash: Hex): Promise<boolean> {
    try {
      await this.client.sendRawTransaction({ serializedTransaction: raw });
      return true;
    } catch (error) {
      // No answer is not a refusal: the transaction may have arrived. The caller keeps it to send again.
      if (isUnreachable(error)) throw error;
      return (await this.state(hash)).state !== 'UNKNOWN';
    }
  }

  /** Throws when the node does not answer: UNKNOWN means the node answered that it knows no such transaction. */
  async state(hash: Hex): Promise<TransferState> {
    const receipt = await this.client.getTransactionReceipt({ hash }).catch((error: unknown) => {
      if (error instanceof TransactionReceiptNotFoundError) return null;
      throw error;
    });
    if (receipt) {
      const head = await this.client.getBlockNumber({ cacheTime: 0 });
      return { state: 'MINED', success: receipt.status === 'success', confirmations: Number(head - receipt.blockNumber) + 1 };
    }
    const pending = await this.client.getTransaction({ hash }).catch((error: unknown) => {
      if (error instanceof TransactionNotFoundError) return null;
      throw error;
    });
    return pending ? { state: 'PENDING' } : { state: 'UNKNOWN' };
  }

  async head(): Promise<bigint> {
    return this.client.getBlockNumber({ cacheTime: 0 });
  }

  /**
   * Payments into any address in blocks `from` to `to`: native ETH of successful transactions, and
   * USDT Transfer logs. `index` tells payments of one transaction apart (the log index; -1 for ETH).
   */
  async paymentsIn(from: bigint, to: bigint): Promise<ChainPayment[]> {
    const payments: ChainPayment[] = [];
    for (let number = from; number <= to; number++) {
      const block = await this.client.getBlock({ blockNumber: number, includeTransactions: true });
      for (const tx of block.transactions) {
        if (!tx.to || tx.value === 0n) continue;
        const receipt = await this.client.getTransactionReceipt({ hash: tx.hash });
        if (receipt.status === 'success') payments.push({ currency: 'ETH', to: tx.to.toLowerCase(), units: tx.value, txHash: tx.hash, index: -1, blockNumber: number });
      }
    }
    if (this.options.usdtAddress) {
      const logs = await this.client.getLogs({ address: this.token(), event: TRANSFER_EVENT, fromBlock: from, toBlock: to });
      for (const log of logs) {
        if (!log.args.to || !log.args.value || log.logIndex === null || log.transactionHash === null || log.blockNumber === null) continue;
        payments.push({ currency: 'USDT', to: log.args.to.toLowerCase(), units: log.args.value, txHash: log.transactionHash, index: log.logIndex, blockNumber: log.blockNumber });
      }
    }
    return payments;
  }

  /** What the hot wallet and the given deposit addresses hold together (the reconciler's chain check). */
  async holdings(currency: Currency, depositAddresses: string[]): Promise<bigint> {
    let total = await this.balanceOf(this.hot.address, currency);
    for (let start = 0; start < depositAddresses.length; start += 50) {
      const balances = await Promise.all(depositAddresses.slice(start, start + 50).map((address) => this.balanceOf(address, currency)));
      total += balances.reduce((sum, b) => sum + b, 0n);
    }
    return total;
  }

  /** What an address holds on chain, in the currency's smallest unit. */
  async balanceOf(address: string, currency: Currency): Promise<bigint> {
    if (currency === 'ETH') return this.client.getBalance({ address: getAddress(address) });
    return this.client.readContract({ address: this.token(), abi: ERC20, functionName: 'balanceOf', args: [getAddress(address)] });
  }

  private token(): Hex {
    if (!this.options.usdtAddress) throw new Error('USDT_TOKEN_ADDRESS is not configured');
    return getAddress(this.options.usdtAddress);
  }
}
