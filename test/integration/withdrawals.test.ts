import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createPublicClient, http, parseAbi, type Hex } from 'viem';
import { mnemonicToAccount } from 'viem/accounts';
import { startTestApp, startTestWorkers, type Session, type TestApp } from '../helpers/app.js';
import type { Workers } from '../../workers/main.js';
import { httpAs, makeUser } from '../helpers/factories.js';
import { walletWith as walletWithFunds } from '../helpers/wallets.js';
import type { Currency } from '../../src/wallets/money.js';

const DEV_MNEMONIC = 'test test test test test test test test test test test junk';
const client = createPublicClient({ transport: http(process.env.EVM_RPC_URL) });
const token = process.env.USDT_TOKEN_ADDRESS as Hex;
const erc20 = parseAbi(['function balanceOf(address) view returns (uint256)']);

/** A fresh address nobody else pays to (so its balance says exactly what this test sent). */
let accounts = 0;
const freshAddress = () => mnemonicToAccount(DEV_MNEMONIC, { accountIndex: 7, addressIndex: Math.floor(Math.random() * 1e6) + ++accounts }).address.toLowerCase() as Hex;
const onChain = async (address: Hex, currency: Currency) =>
  currency === 'ETH' ? client.getBalance({ address }) : client.readContract({ address: token, abi: erc20, functionName: 'balanceOf', args: [address] });

describe('withdrawals to the chain', () => {
  let t: TestApp;
  let workers: Workers;
  const api = httpAs(() => t);
  before(async () => {
    t = await startTestApp({ DEPOSIT_CONFIRMATIONS: '2', WALLET_DAILY_LIMIT_ETH: '30000', WALLET_DAILY_LIMIT_USDT: '1000', WITHDRAWAL_FEE_ETH: '0.001', WITHDRAWAL_FEE_USDT: '1' });
    workers = await startTestWorkers(t);
  });
  after(async () => {
    await workers.close();
    await t.close();
  });

  const walletWith = (s: Session, currency: Currency, units: bigint) => walletWithFunds(t, s, currency, units);
  let n = 0;
  const requestId = () => `wd-${Date.now()}-${++n}`;
  const withdraw = (s: Session, body: object) => api(s, 'POST', '/api/wallet-withdrawals', body);
  const until = async (s: Session, id: string, statuses: string[], ms = 20_000) => {
    const deadline = Date.now() + ms;
    for (;;) {
      const res = (await api(s, 'GET', `/api/wallet-withdrawals/${id}`)).json();
      if (statuses.includes(res.status) || Date.now() > deadline) return res;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  };
  const metrics = async () => (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
  const wallet = async (s: Session, id: string) => (await api(s, 'GET', `/api/wallets/${id}`)).json() as { balance: string; available: string };

  it('pays ETH and USDT on chain, holds amount and fee until confirmed, and the books balance', async () => {
    const s = await makeUser(t);
    for (const [currency, units, amount, fee, left] of [
      ['ETH', 10n ** 18n, '0.25', '0.001', '0.749'],
      ['USDT', 50_000_000n, '12.5', '1', '36.5'],
    ] as const) {
      const walletId = await walletWith(s, currency, units);
      const to = freshAddress();
      const before_ = await onChain(to, currency);
      const res = await withdraw(s, { requestId: requestId(), walletId, toAddress: to, amount });
      assert.equal(res.statusCode, 200, res.body);
      const created = res.json();
      assert.deepEqual([created.status, created.amount, created.fee, created.currency], ['pending', amount, fee, currency]);
      assert.equal((await wallet(s, walletId)).available, left);
      const done = await until(s, created.id, ['confirmed', 'refunded']);
      assert.equal(done.status, 'confirmed', JSON.stringify(done));
      assert.match(done.txHash, /^0x[0-9a-f]{64}$/);
      const paid = (await onChain(to, currency)) - before_;
      assert.equal(paid, currency === 'ETH' ? 25n * 10n ** 16n : 12_500_000n, `${currency} arrived exactly once`);
      assert.deepEqual(await wallet(s, walletId), { ...(await wallet(s, walletId)), balance: left, available: left });
    }
    const report = await t.ctx.services.walletsReconciler.run();
    assert.ok(report.ok, JSON.stringify(report));
    assert.match(await metrics(), /^wallet_books_ok 1$/m);
  });

  it('checks first and changes nothing: address, amount, limit, balance, ownership', async () => {
    const [s, other] = await Promise.all([makeUser(t), makeUser(t)]);
    const walletId = await walletWith(s, 'USDT', 2_000_000_000n);
    const to = freshAddress();
    for (const [toAddress, amount, code] of [
      ['0x1234', '1', 'ADDRESS_INVALID'],
      ['0x0000000000000000000000000000000000000000', '1', 'ADDRESS_INVALID'],
      [to, '1.0000001', 'AMOUNT_INVALID'],
      [to, '1000.000001', 'LIMIT_EXCEEDED'],
    ] as const) {
      const res = await withdraw(s, { requestId: requestId(), walletId, toAddress, amount });
      assert.equal(res.statusCode, 400, res.body);
      assert.equal(res.json().code, code);
    }
    const atLimit = await withdraw(s, { requestId: requestId(), walletId, toAddress: to, amount: '1000' });
    assert.equal(atLimit.statusCode, 200, 'exactly the limit passes');
    const past = await withdraw(s, { requestId: requestId(), walletId, toAddress: to, amount: '0.000001' });
    assert.equal(past.json().code, 'LIMIT_EXCEEDED', 'the limit counts the last 24 hours');
    const theirs = await withdraw(other, { requestId: requestId(), walletId, toAddress: to, amount: '1' });
    assert.equal(theirs.json().code, 'WALLET_NOT_FOUND');
    const poor = await walletWith(other, 'ETH', 10n ** 15n);
    const tooMuch = await withdraw(other, { requestId: requestId(), walletId: poor, toAddress: to, amount: '0.0005' });
    assert.equal(tooMuch.json().code, 'INSUFFICIENT_FUNDS', 'amount plus fee must be there');
    assert.equal((await wallet(other, poor)).available, '0.001');
  });

  it('100 identical requests make one withdrawal and one payment; 100 different ones never overdraw', async () => {
    const s = await makeUser(t);
    const walletId = await walletWith(s, 'USDT', 110_000_000n);
    const to = freshAddress();
    const same = { requestId: requestId(), walletId, toAddress: to, amount: '10' };
    const answers = await Promise.all(Array.from({ length: 100 }, () => withdraw(s, same)));
    assert.ok(answers.every((a) => a.statusCode === 200));
    assert.equal(new Set(answers.map((a) => a.json().id)).size, 1);
    assert.equal((await wallet(s, walletId)).available, '99');
    await until(s, answers[0]!.json().id, ['confirmed']);
    assert.equal(await onChain(to, 'USDT'), 10_000_000n);

    // 9 each, so that all hundred stay within the 24-hour limit (1,000) even while every one of them is
    // pending at once (the limit counts withdrawals not refused): only the balance can refuse them.
    const many = await Promise.all(Array.from({ length: 100 }, () => withdraw(s, { requestId: requestId(), walletId, toAddress: to, amount: '9' })));
    const accepted = many.filter((a) => a.statusCode === 200);
    assert.equal(accepted.length, 9, 'nine times 9 plus the fee fit in 99');
    assert.deepEqual([...new Set(many.filter((a) => a.statusCode !== 200).map((a) => a.json().code))], ['INSUFFICIENT_FUNDS']);
    assert.equal((await wallet(s, walletId)).available, '9');
    for (const a of accepted) assert.equal((await until(s, a.json().id, ['confirmed', 'refunded'], 40_000)).status, 'confirmed');
    assert.equal(await onChain(to, 'USDT'), 91_000_000n);
  });

  it('refunds what the chain refuses: more than the hot wallet holds', async () => {
    const s = await makeUser(t);
    const walletId = await walletWith(s, 'ETH', 25_000n * 10n ** 18n);
    const res = await withdraw(s, { requestId: requestId(), walletId, toAddress: freshAddress(), amount: '20000' });
    assert.equal(res.statusCode, 200, res.body);
    const done = await until(s, res.json().id, ['refunded', 'confirmed']);
    assert.equal(done.status, 'refunded');
    assert.equal((await wallet(s, walletId)).available, '25000');
    // This wallet was funded by an entry, not from the chain: the books balance, but the chain check
    // reports that the hot wallet and deposit addresses hold less ETH than members are owed.
    const report = await t.ctx.services.walletsReconciler.run();
    assert.deepEqual([report.mismatchedAccounts, report.negativeWallets, report.totals], [[], [], { ETH: '0', USDT: '0' }]);
    assert.equal(report.chain?.ETH?.covered, false);
    assert.equal(report.chain?.USDT?.covered, true);
    assert.equal(report.ok, false);
    // The mismatch is a metric for the operator's alerts (and a log line), and no balance changed.
    const shown = await metrics();
    assert.match(shown, /^wallet_books_ok 0$/m);
    assert.match(shown, /^wallet_books_problems\{kind="uncovered_currency"\} 1$/m);
    assert.match(shown, /^wallet_books_problems\{kind="unbalanced_currency"\} 0$/m);
    assert.match(shown, /^wallet_books_checked_timestamp_seconds \d+/m);
    assert.equal((await wallet(s, walletId)).available, '25000');
  });

  it('a transaction signed and stored before a crash is broadcast again, and paid once', async () => {
    const s = await makeUser(t);
    const walletId = await walletWith(s, 'ETH', 10n ** 18n);
    const to = freshAddress();
    // Stop the worker's queue from sending it: what the crash left is a pending withdrawal whose
    // signed bytes are stored but were never broadcast.
    await workers.close();
    try {
      const res = await withdraw(s, { requestId: requestId(), walletId, toAddress: to, amount: '0.1' });
      const id = res.json().id as string;
      const collection = t.db.collection<{ _id: string; status: string; txHash: string | null }>('wallet_withdrawals');
      const doc = (await collection.findOne({ _id: id }))!;
      const { EvmChain } = await import('../../src/wallets/chain.js');
      const chain = new EvmChain({ rpcUrl: t.config.EVM_RPC_URL, depositMnemonic: t.config.DEPOSIT_MNEMONIC, hotWalletKey: t.config.HOT_WALLET_PRIVATE_KEY as Hex, usdtAddress: t.config.USDT_TOKEN_ADDRESS });
      const signed = await chain.signTransfer({ currency: 'ETH', to, units: 10n ** 17n, nonce: await chain.chainNonce() });
      await collection.updateOne({ _id: doc._id }, { $set: { rawTx: signed.raw, txHash: signed.hash, nonce: signed.nonce, updatedAt: new Date(Date.now() - 60_000) } });
      // The sweep finds it, sends those same bytes, and confirms it; sending once more pays nothing more.
      await t.ctx.services.withdrawals.sweep();
      await t.ctx.services.withdrawals.send(id);
      const deadline = Date.now() + 20_000;
      while ((await collection.findOne({ _id: id }))?.status !== 'confirmed' && Date.now() < deadline) {
        await t.ctx.services.withdrawals.sweep();
        await new Promise((resolve) => setTimeout(resolve, 300));
      }
      const final = (await collection.findOne({ _id: id }))!;
      assert.equal(final.status, 'confirmed');
      assert.equal(final.txHash, signed.hash, 'the stored transaction is the one paid');
      assert.equal(await onChain(to as Hex, 'ETH'), 10n ** 17n);
    } finally {
      workers = await startTestWorkers(t);
    }
  });
});
