import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createPublicClient, createWalletClient, http, parseAbi, type Hex } from 'viem';
import { mnemonicToAccount } from 'viem/accounts';
import { hardhat } from 'viem/chains';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { httpAs, makeUser } from '../helpers/factories.js';

const rpc = http(process.env.EVM_RPC_URL);
// Hardhat's funded account #3: this test file's own sender, so no other test's transactions interleave with its nonces.
const sender = mnemonicToAccount('test test test test test test test test test test test junk', { addressIndex: 3 });
const payer = createWalletClient({ account: sender, transport: rpc, chain: hardhat });
const reader = createPublicClient({ transport: rpc });
const token = process.env.USDT_TOKEN_ADDRESS as Hex;

describe('deposits from the chain', () => {
  let t: TestApp;
  const api = httpAs(() => t);
  before(async () => {
    t = await startTestApp({ DEPOSIT_CONFIRMATIONS: '2' });
  });
  after(() => t.close());

  const scanUntil = async (done: () => Promise<boolean>, ms = 20_000) => {
    const deadline = Date.now() + ms;
    while (!(await done()) && Date.now() < deadline) {
      await t.ctx.services.deposits.scan();
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  };

  it('credits ETH and USDT once they are confirmed, once, even when blocks are read again', async () => {
    // The watcher starts at the chain's head.
    await t.ctx.services.deposits.scan();
    const s = await makeUser(t);
    const eth = (await api(s, 'POST', '/api/wallets', { currency: 'ETH' })).json();
    const usdt = (await api(s, 'POST', '/api/wallets', { currency: 'USDT' })).json();
    const address = async (id: string) => (await api(s, 'GET', `/api/wallets/${id}/deposit-address`)).json().address as Hex;
    const [ethAddress, usdtAddress] = [await address(eth.id), await address(usdt.id)];

    const sent = [
      await payer.sendTransaction({ to: ethAddress, value: 3n * 10n ** 17n }),
      await payer.writeContract({ address: token, abi: parseAbi(['function transfer(address,uint256) returns (bool)']), functionName: 'transfer', args: [usdtAddress, 7_000_000n] }),
      // ETH to the USDT wallet's address: not creditable to it, left on chain.
      await payer.sendTransaction({ to: usdtAddress, value: 10n ** 15n }),
    ];
    const mined = await Promise.all(sent.map((hash) => reader.waitForTransactionReceipt({ hash })));
    const available = async (id: string) => (await api(s, 'GET', `/api/wallets/${id}`)).json().available as string;

    // Not before the confirmations: one block deep is not enough.
    const head = await reader.getBlockNumber({ cacheTime: 0 });
    if (head === mined[1]!.blockNumber) {
      await t.ctx.services.deposits.scan();
      assert.equal(await available(usdt.id), '0', 'one confirmation is not two');
    }
    await scanUntil(async () => (await available(eth.id)) === '0.3' && (await available(usdt.id)) === '7');
    assert.equal(await available(eth.id), '0.3');
    assert.equal(await available(usdt.id), '7');

    // A watcher that restarts without its progress reads the same blocks again: nothing twice.
    const first = mined.reduce((min, r) => (r.blockNumber < min ? r.blockNumber : min), mined[0]!.blockNumber);
    await t.db.collection('chain_cursors').updateOne({ _id: 'deposits' as never }, { $set: { nextBlock: Number(first) - 3 } });
    let again = 0;
    for (let i = 0; i < 5; i++) again += (await t.ctx.services.deposits.scan())?.credited ?? 0;
    assert.equal(again, 0);
    assert.equal(await available(eth.id), '0.3');
    assert.equal(await available(usdt.id), '7');

    const history = (await api(s, 'GET', `/api/wallets/${eth.id}/transactions`)).json();
    assert.deepEqual(history.items.map((line: { kind: string; amount: string }) => [line.kind, line.amount]), [['DEPOSIT', '0.3']]);
    const report = await t.ctx.services.walletsReconciler.run();
    assert.ok(report.ok, JSON.stringify(report));
  });
});
