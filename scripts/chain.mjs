// The development chain: Hardhat's network (`hardhat node`, from npm) on the port it is given, with the USDT
// token (chain/TetherToken.sol, compiled into chain/TetherToken.json) deployed by account #0, which is
// also the service's hot wallet, and minted to the hot wallet and to accounts #1 to #9 (left to
// people and tests that send deposits from outside). Its state lives in memory: a restart starts a
// new chain (README, "Wallets").
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

/** Deploys the token from the hot wallet and mints it; its address. */
async function deployToken(rpcUrl) {
  const { createPublicClient, createWalletClient, http } = await import('viem');
  const { mnemonicToAccount, privateKeyToAccount } = await import('viem/accounts');
  const { hardhat } = await import('viem/chains');
  const artifact = JSON.parse(readFileSync(path.join(root, 'chain', 'TetherToken.json'), 'utf8'));
  const account = privateKeyToAccount(DEV_HOT_WALLET_KEY);
  const transport = http(rpcUrl);
  const wallet = createWalletClient({ account, chain: hardhat, transport });
  const reader = createPublicClient({ chain: hardhat, transport });
  const deployed = await reader.waitForTransactionReceipt({ hash: await wallet.deployContract({ abi: artifact.abi, bytecode: artifact.bytecode }) });
  const address = deployed.contractAddress;
  const holders = [account.address, ...Array.from({ length: 9 }, (_, i) => mnemonicToAccount(DEV_MNEMONIC, { addressIndex: i + 1 }).address)];
  let last;
  for (const holder of holders) last = await wallet.writeContract({ address, abi: artifact.abi, functionName: 'mint', args: [holder, MINT_UNITS] });
  await reader.waitForTransactionReceipt({ hash: last });
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
  try {
    await waitForLine(child, /Started HTTP and WebSocket JSON-RPC server/, 'hardhat node', 60_000);
    const rpcUrl = `http://127.0.0.1:${port}`;
    return { child, rpcUrl, usdtAddress: await deployToken(rpcUrl) };
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  }
}
