// The development chain: Hardhat's network (`hardhat node`, from npm) on the port it is given, with the USDT
// token (chain/TetherToken.sol, compiled into chain/TetherToken.json) deployed by account #0, which is
// also the service's hot wallet, and minted to the hot wallet and to accounts #1 to #9 (left to
// people and tests that send deposits from outside). Its state lives in memory: a restart starts a
// new chain (docs/clients/wallets.md).
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** Hardhat's well-known development mnemonic: its accounts are public, and funded only on development chains. */
export const DEV_MNEMONIC = 'test test test test test test test test test test test junk';
/** Account #0 of that mnemonic: the development hot wallet and token deployer. */
export const DEV_HOT_WALLET_KEY = '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80';
const MINT_UNITS = 10_000_000n * 10n ** 6n;
/** Gas the deploy (about 460,000) and each mint (about 70,000) are given, what is not used is not charged; and the most paid a unit (the new chain's base fee starts at 1 gwei and falls). */
const DEPLOY_GAS = 3_000_000n;
const MINT_GAS = 200_000n;
const MAX_FEE_PER_GAS = 10n ** 10n;

function waitForLine(child, pattern, what, timeoutMs) {
  return new Promise((resolve, reject) => {
    let seen = '';
    const timer = setTimeout(() => reject(new Error(`${what} did not start within ${timeoutMs} ms: ${seen.slice(-2000)}`)), timeoutMs);
    const onData = (chunk) => {
      seen += chunk.toString();
      if (pattern.test(seen)) {
        clearTimeout(timer);
        child.stdout.off('data', onData);
        child.stdout.resume();
        resolve();
      }
    };
    child.stdout.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${what} exited with code ${code} before it was ready: ${seen.slice(-2000)}`));
    });
  });
}

/** What the deploy uses of viem: loaded while the chain boots (each takes most of a second here). */
async function loadViem() {
  const [viem, accounts, chains] = await Promise.all([import('viem'), import('viem/accounts'), import('viem/chains')]);
  return { ...viem, ...accounts, hardhat: chains.hardhat };
}

/**
 * Deploys the token from the hot wallet and mints it; its address. The chain is new (the hot wallet's
 * nonce is 0) and mines each transaction as it comes: each is signed here with its nonce, gas and
 * fees given and sent raw, one request each (no estimate, no nonce or fee read), one after another
 * (an automining chain takes no nonce ahead of the next one it expects); the address is the deploy's.
 */
async function deployToken(rpcUrl, viem) {
  const { createPublicClient, encodeDeployData, encodeFunctionData, getContractAddress, http, mnemonicToAccount, privateKeyToAccount, hardhat } = viem;
  const artifact = JSON.parse(readFileSync(path.join(root, 'chain', 'TetherToken.json'), 'utf8'));
  const account = privateKeyToAccount(DEV_HOT_WALLET_KEY);
  const client = createPublicClient({ chain: hardhat, transport: http(rpcUrl) });
  const address = getContractAddress({ from: account.address, nonce: 0n });
  const holders = [account.address, ...Array.from({ length: 9 }, (_, i) => mnemonicToAccount(DEV_MNEMONIC, { addressIndex: i + 1 }).address)];
  const transactions = [
    { data: encodeDeployData({ abi: artifact.abi, bytecode: artifact.bytecode }), gas: DEPLOY_GAS },
    ...holders.map((holder) => ({ to: address, data: encodeFunctionData({ abi: artifact.abi, functionName: 'mint', args: [holder, MINT_UNITS] }), gas: MINT_GAS })),
  ];
  const sent = [];
  for (const [nonce, transaction] of transactions.entries()) {
    const signed = await account.signTransaction({ ...transaction, chainId: hardhat.id, type: 'eip1559', nonce, maxFeePerGas: MAX_FEE_PER_GAS, maxPriorityFeePerGas: 10n ** 9n });
    sent.push(await client.sendRawTransaction({ serializedTransaction: signed }));
  }
  const receipts = await Promise.all(sent.map((hash) => client.waitForTransactionReceipt({ hash, pollingInterval: 50 })));
  const failed = receipts.find((receipt) => receipt.status !== 'success');
  if (failed) throw new Error(`the token's deploy or a mint failed: ${failed.transactionHash}`);
  if (receipts[0].contractAddress?.toLowerCase() !== address.toLowerCase()) throw new Error(`the token went to ${receipts[0].contractAddress}, not ${address}`);
  return address;
}

/** Starts the chain on `port` and deploys the token; `{child, rpcUrl, usdtAddress}`. */
export async function startChain(port) {
  const cli = path.join(root, 'node_modules', 'hardhat', 'internal', 'cli', 'cli.js');
  const env = { ...process.env, HARDHAT_DISABLE_TELEMETRY_PROMPT: 'true' };
  delete env.HARDHAT_NETWORK;
  const child = spawn(process.execPath, [cli, 'node', '--config', path.join(root, 'chain', 'hardhat.config.cjs'), '--hostname', '127.0.0.1', '--port', String(port)], {
    cwd: path.join(root, 'chain'),
    stdio: ['ignore', 'pipe', 'inherit'],
    env,
  });
  const viem = loadViem();
  // Awaited below; a failure to load is seen there, not as an unhandled rejection should the node fail first.
  viem.catch(() => undefined);
  try {
    await waitForLine(child, /Started HTTP and WebSocket JSON-RPC server/, 'hardhat node', 60_000);
    const rpcUrl = `http://127.0.0.1:${port}`;
    return { child, rpcUrl, usdtAddress: await deployToken(rpcUrl, await viem) };
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  }
}
