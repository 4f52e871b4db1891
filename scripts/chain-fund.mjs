// `npm run chain:fund -- <address> <amount> [ETH|USDT]`: sends test ETH (default) or test USDT to an
// address on the development chain (`npm start`'s, at EVM_RPC_URL or http://127.0.0.1:8545), from
// Hardhat's public development account #1: how to make a deposit to a wallet's deposit address.
import { createPublicClient, createWalletClient, getContractAddress, http, isAddress, parseUnits } from 'viem';
import { mnemonicToAccount, privateKeyToAccount } from 'viem/accounts';
import { hardhat } from 'viem/chains';
import { DEV_HOT_WALLET_KEY, DEV_MNEMONIC } from './chain.mjs';

const [to, amount, currency = 'ETH'] = process.argv.slice(2);
if (!to || !isAddress(to, { strict: false }) || !amount || !/^\d+(\.\d+)?$/.test(amount) || !['ETH', 'USDT'].includes(currency.toUpperCase())) {
  process.stderr.write('usage: npm run chain:fund -- <0x address> <amount> [ETH|USDT]\n');
  process.exit(2);
}
const rpcUrl = process.env.EVM_RPC_URL ?? 'http://127.0.0.1:8545';
// The token is the first contract account #0 deploys on a new development chain, unless told otherwise.
const usdt = process.env.USDT_TOKEN_ADDRESS ?? getContractAddress({ from: privateKeyToAccount(DEV_HOT_WALLET_KEY).address, nonce: 0n });
const account = mnemonicToAccount(DEV_MNEMONIC, { addressIndex: 1 });
const transport = http(rpcUrl);
const wallet = createWalletClient({ account, chain: hardhat, transport });
const reader = createPublicClient({ chain: hardhat, transport });
const ERC20 = [{ type: 'function', name: 'transfer', stateMutability: 'nonpayable', inputs: [{ name: 'to', type: 'address' }, { name: 'value', type: 'uint256' }], outputs: [{ type: 'bool' }] }];
const hash =
  currency.toUpperCase() === 'ETH'
    ? await wallet.sendTransaction({ to, value: parseUnits(amount, 18) })
    : await wallet.writeContract({ address: usdt, abi: ERC20, functionName: 'transfer', args: [to, parseUnits(amount, 6)] });
const receipt = await reader.waitForTransactionReceipt({ hash });
process.stdout.write(`sent ${amount} ${currency.toUpperCase()} to ${to} on ${rpcUrl}: ${hash} (block ${receipt.blockNumber}); the deposit counts after DEPOSIT_CONFIRMATIONS more blocks\n`);
