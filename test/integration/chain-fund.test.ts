import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { createPublicClient, http, parseUnits } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { hardhat } from 'viem/chains';

const script = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../scripts/chain-fund.mjs');
const run = promisify(execFile);
const ERC20_BALANCE = [{ type: 'function', name: 'balanceOf', stateMutability: 'view', inputs: [{ name: 'owner', type: 'address' }], outputs: [{ type: 'uint256' }] }] as const;

describe('npm run chain:fund', () => {
  it('sends test ETH and test USDT to an address on the development chain', async () => {
    const to = privateKeyToAccount(generatePrivateKey()).address;
    const env = { ...process.env, EVM_RPC_URL: process.env.EVM_RPC_URL!, USDT_TOKEN_ADDRESS: process.env.USDT_TOKEN_ADDRESS! };
    const eth = await run(process.execPath, [script, to, '0.25'], { env });
    assert.match(eth.stdout, /sent 0\.25 ETH to 0x/);
    await run(process.execPath, [script, to, '12.5', 'USDT'], { env });
    const chain = createPublicClient({ chain: hardhat, transport: http(env.EVM_RPC_URL) });
    assert.equal(await chain.getBalance({ address: to }), parseUnits('0.25', 18));
    assert.equal(await chain.readContract({ address: env.USDT_TOKEN_ADDRESS as `0x${string}`, abi: ERC20_BALANCE, functionName: 'balanceOf', args: [to] }), parseUnits('12.5', 6));
    await assert.rejects(run(process.execPath, [script, 'not-an-address', '1'], { env }), /usage/);
  });
});
