import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import path from 'node:path';
import type { JournalDoc } from '../../src/wallets/ledger.repo.js';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { createPublicClient, http, type Hex } from 'viem';
import { mnemonicToAccount } from 'viem/accounts';
import { startTestApp, startTestWorkers, type TestApp } from '../helpers/app.js';
import { httpAs, makeUser } from '../helpers/factories.js';
import { freePort } from '../helpers/ports.js';
import { spawnRole, type RoleProcess } from '../helpers/processes.js';
import { walletWith } from '../helpers/wallets.js';
import type { Workers } from '../../workers/main.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
type Chain = { child: ChildProcess; rpcUrl: string; usdtAddress: string };

/**
 * The crash the wallets are built for, made for real: this file's own chain node is stopped (SIGSTOP)
 * after a withdrawal's debit and before its payment, and the worker sending it is killed (SIGKILL)
 * while it waits for the chain. Nothing may be refunded for a silence, nothing paid twice.
 */
describe('a withdrawal while the chain is stopped and its worker is killed', () => {
  let chain: Chain;
  let t: TestApp;
  let worker: RoleProcess | null = null;
  let workers: Workers | null = null;
  const api = httpAs(() => t);

  before(async () => {
    const { startChain } = (await import(pathToFileURL(path.join(root, 'scripts', 'chain.mjs')).href)) as { startChain: (port: number) => Promise<Chain> };
    chain = await startChain(await freePort());
  });
  after(async () => {
    await worker?.kill('SIGKILL');
    await workers?.close();
    await t?.close();
    chain.child.kill('SIGCONT');
    chain.child.kill('SIGKILL');
  });

  it('keeps the debit, refunds nothing while the chain is silent, and pays once after it is back', async () => {
    const env = { EVM_RPC_URL: chain.rpcUrl, USDT_TOKEN_ADDRESS: chain.usdtAddress, EVM_RPC_TIMEOUT_MS: '1000', WITHDRAWAL_RESEND_AFTER: '2', DEPOSIT_CONFIRMATIONS: '2', WITHDRAWAL_FEE_ETH: '0.001', WALLET_DAILY_LIMIT_ETH: '1' };
    t = await startTestApp(env);
    const { keys, redis } = t.ctx.platform;
    const withdrawals = t.ctx.services.withdrawals;
    const s = await makeUser(t);
    const walletId = await walletWith(t, s, 'ETH', 10n ** 18n);
    const to = mnemonicToAccount('test test test test test test test test test test test junk', { accountIndex: 9, addressIndex: 1 }).address;
    worker = await spawnRole('worker', t.config, { ...env, DEPOSIT_MNEMONIC: t.config.DEPOSIT_MNEMONIC! }, (output) => output.includes('"msg":"workers running"'));

    chain.child.kill('SIGSTOP');
    const res = await api(s, 'POST', '/api/wallet-withdrawals', { requestId: 'crash-withdrawal-1', walletId, toAddress: to, amount: '0.3' });
    assert.equal(res.statusCode, 200, res.body);
    const id = res.json().id as string;
    assert.equal(res.json().status, 'pending');

    // The worker takes the job and the hot wallet's lock, then waits for the silent chain: kill it there.
    const deadline = Date.now() + 10_000;
    while (!(await redis.exists(keys.wallets.hotWalletLock)) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal(await redis.exists(keys.wallets.hotWalletLock), 1, `the worker never started sending:\n${worker.output()}`);
    await worker.kill('SIGKILL');
    worker = null;

    // Another worker's attempts, while the chain stays silent, fail and change nothing (the dead
    // holder's lock runs out first): no answer is not a refusal.
    await assert.rejects(withdrawals.send(id));
    await assert.rejects(withdrawals.sweep());
    const waiting = (await t.ctx.repos.withdrawals.findById(id))!;
    assert.deepEqual([waiting.status, waiting.rawTx, waiting.failure], ['pending', null, null]);
    const wallet = async () => (await api(s, 'GET', `/api/wallets/${walletId}`)).json() as { balance: string; available: string };
    assert.equal((await wallet()).available, '0.699', 'the debit holds');
    assert.equal(await t.db.collection<JournalDoc>('ledger_journal').countDocuments({ _id: `withdrawal-refund:${id}` }), 0);

    // The chain is back: the worker role's sweep sends it, once, and confirms it.
    chain.child.kill('SIGCONT');
    workers = await startTestWorkers(t);
    const confirmedBy = Date.now() + 30_000;
    let final = (await t.ctx.repos.withdrawals.findById(id))!;
    while (final.status !== 'confirmed' && Date.now() < confirmedBy) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      final = (await t.ctx.repos.withdrawals.findById(id))!;
    }
    assert.equal(final.status, 'confirmed', JSON.stringify(final));
    const client = createPublicClient({ transport: http(chain.rpcUrl) });
    assert.equal(await client.getBalance({ address: to as Hex }), 3n * 10n ** 17n, 'paid exactly once');
    assert.deepEqual(await wallet(), { ...(await wallet()), balance: '0.699', available: '0.699' });
    const entries = await t.db.collection<JournalDoc>('ledger_journal').find({ _id: { $regex: `^withdrawal-[a-z]+:${id}$` } }).toArray();
    assert.deepEqual(entries.map((e) => [e._id.split(':')[0], e.state]).sort(), [
      ['withdrawal-fee', 'DONE'],
      ['withdrawal-hold', 'DONE'],
      ['withdrawal-paid', 'DONE'],
    ]);
    const report = await t.ctx.services.walletsReconciler.run();
    assert.ok(report.ok, JSON.stringify(report));
  });
});
