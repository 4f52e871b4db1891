import assert from 'node:assert/strict';
import { generateKeyPairSync, sign } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import solc from 'solc';
import { createPublicClient, http, parseAbi } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { bearer, startTestApp, type Session, type TestApp } from '../helpers/app.js';
import { httpAs, makeUser } from '../helpers/factories.js';
import { fund as fundWallet, ledgerOf } from '../helpers/wallets.js';
import { until } from '../helpers/wait.js';
import type { AccountDoc, JournalDoc } from '../../src/wallets/ledger.repo.js';
import { formatAmount, parseAmount, toStored, type Currency } from '../../src/wallets/money.js';
import { transferSigned } from '../../src/wallets/transfers.service.js';

const root = path.resolve(import.meta.dirname, '..', '..', '..');

describe('the development chain', () => {
  it('runs the token compiled from its source, funded in the hot wallet', async () => {
    const artifact = JSON.parse(readFileSync(path.join(root, 'chain', 'TetherToken.json'), 'utf8'));
    const source = readFileSync(path.join(root, 'chain', 'TetherToken.sol'), 'utf8');
    const input = {
      language: 'Solidity',
      sources: { 'TetherToken.sol': { content: source } },
      settings: { optimizer: { enabled: true, runs: 200 }, evmVersion: 'paris', outputSelection: { '*': { '*': ['evm.bytecode.object'] } } },
    };
    const compiled = JSON.parse(solc.compile(JSON.stringify(input)));
    assert.equal(`0x${compiled.contracts['TetherToken.sol'].TetherToken.evm.bytecode.object}`, artifact.bytecode, 'chain/TetherToken.json is what the source compiles to');
    assert.equal(artifact.compiler, solc.version());

    const client = createPublicClient({ transport: http(process.env.EVM_RPC_URL) });
    const hot = privateKeyToAccount('0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80').address;
    const abi = parseAbi(['function balanceOf(address) view returns (uint256)', 'function decimals() view returns (uint8)']);
    const token = process.env.USDT_TOKEN_ADDRESS as `0x${string}`;
    assert.equal(await client.readContract({ address: token, abi, functionName: 'decimals' }), 6);
    assert.ok((await client.readContract({ address: token, abi, functionName: 'balanceOf', args: [hot] })) > 0n);
    const first = await client.getBlockNumber({ cacheTime: 0 });
    await until(async () => (await client.getBlockNumber({ cacheTime: 0 })) > first, 'the chain to mine a block (one a second)', 5_000);
  });
});

describe('wallets and transfers', () => {
  let t: TestApp;
  const api = httpAs(() => t);
  before(async () => {
    t = await startTestApp();
  });
  after(() => t.close());

  const createWallet = async (s: Session, currency: Currency = 'ETH', name?: string) => {
    const res = await api(s, 'POST', '/api/wallets', { currency, ...(name === undefined ? {} : { name }) });
    assert.equal(res.statusCode, 200, res.body);
    return res.json() as { id: string; currency: Currency; name: string; balance: string; available: string };
  };
  const fund = (walletId: string, currency: Currency, units: bigint) => fundWallet(t, walletId, currency, units);
  const balanceOf = async (s: Session, walletId: string) => (await api(s, 'GET', `/api/wallets/${walletId}`)).json().available as string;
  const transfer = async (s: Session, items: object[]) => {
    const res = await api(s, 'POST', '/api/wallet-transactions', items);
    assert.equal(res.statusCode, 200, res.body);
    return res.json() as { status: string; error: { code: string } | null; id: string | null; amount: string }[];
  };
  let requests = 0;
  const requestId = () => `req-${Date.now()}-${++requests}`;

  it('creates, lists, reads and renames wallets; another member\'s is the same 400 as none', async () => {
    const [owner, stranger] = await Promise.all([makeUser(t), makeUser(t)]);
    const eth = await createWallet(owner);
    assert.deepEqual([eth.currency, eth.name, eth.balance, eth.available], ['ETH', 'ETH', '0', '0']);
    const usdt = await createWallet(owner, 'USDT', '  Savings  ');
    assert.equal(usdt.name, 'Savings');
    assert.deepEqual((await api(owner, 'GET', '/api/wallets')).json().map((w: { id: string }) => w.id), [eth.id, usdt.id]);

    const renamed = await api(owner, 'POST', `/api/wallets/${eth.id}?name=${encodeURIComponent('  Daily  ')}`);
    assert.equal(renamed.json().name, 'Daily');
    const blank = await api(owner, 'POST', `/api/wallets/${eth.id}?name=${encodeURIComponent('   ')}`);
    assert.equal(blank.statusCode, 400);
    assert.equal(blank.json().code, 'WALLET_NAME_INVALID');
    assert.equal((await api(owner, 'POST', `/api/wallets/${eth.id}?name=${'x'.repeat(51)}`)).statusCode, 400);
    assert.equal((await api(owner, 'POST', `/api/wallets/${eth.id}?name=${'x'.repeat(50)}`)).statusCode, 200);
    assert.equal((await api(owner, 'POST', '/api/wallets', { currency: 'DOGE' })).statusCode, 400);

    const strip = (body: { status: number; code: string; message: string }) => ({ status: body.status, code: body.code, message: body.message });
    for (const url of [`/api/wallets/${eth.id}`, `/api/wallets/${eth.id}/deposit-address`, `/api/wallets/${eth.id}/transactions`]) {
      const theirs = await api(stranger, 'GET', url);
      const none = await api(stranger, 'GET', url.replace(eth.id, 'f0f0f0f0-0000-4000-8000-000000000000'));
      assert.equal(theirs.statusCode, 400, url);
      assert.deepEqual(strip(theirs.json()), strip(none.json()), url);
      assert.equal(theirs.json().code, 'WALLET_NOT_FOUND');
    }
    const rename = await api(stranger, 'POST', `/api/wallets/${eth.id}?name=Mine`);
    assert.equal(rename.json().code, 'WALLET_NOT_FOUND');
  });

  it('gives each wallet its own deposit address on the chain', async () => {
    const s = await makeUser(t);
    const [a, b] = [await createWallet(s), await createWallet(s, 'USDT')];
    const [da, db] = await Promise.all([a, b].map(async (w) => (await api(s, 'GET', `/api/wallets/${w.id}/deposit-address`)).json()));
    assert.match(da.address, /^0x[0-9a-f]{40}$/);
    assert.notEqual(da.address, db.address);
    assert.equal(da.network, 'eip155:31337');
    assert.equal(db.currency, 'USDT');
  });

  it('gives wallets made at the same moment each their own deposit address', async () => {
    const people = await Promise.all(Array.from({ length: 12 }, () => makeUser(t)));
    const made = await Promise.all(people.flatMap((p) => [api(p, 'POST', '/api/wallets', { currency: 'ETH' }), api(p, 'POST', '/api/wallets', { currency: 'USDT' })]));
    assert.deepEqual(made.map((res) => res.statusCode), made.map(() => 200), made.find((res) => res.statusCode !== 200)?.body);
    const addresses = await t.db.collection<AccountDoc>('ledger_accounts').find({ _id: { $in: made.map((res) => res.json().id as string) } }).toArray();
    assert.equal(new Set(addresses.map((w) => w.depositAddress)).size, made.length);
    // A counter behind the wallets (restored from an older backup, say): taken indexes are skipped.
    await t.db.collection<{ _id: string; value: number }>('ledger_counters').updateOne({ _id: 'deposit-address' }, { $inc: { value: -3 } });
    const late = await api(people[0]!, 'POST', '/api/wallets', { currency: 'ETH' });
    assert.equal(late.statusCode, 200, late.body);
    assert.equal(await t.db.collection<AccountDoc>('ledger_accounts').countDocuments({ depositAddress: (await api(people[0]!, 'GET', `/api/wallets/${late.json().id}/deposit-address`)).json().address }), 1);
  });

  it('counts a sequence once per call under concurrency, from its first number', async () => {
    const sequence = `probe-${requestId()}`;
    const numbers = await Promise.all(Array.from({ length: 50 }, () => t.ctx.repos.ledger.next(sequence)));
    assert.deepEqual([...numbers].sort((a, b) => a - b), Array.from({ length: 50 }, (_, i) => i + 1), numbers.join(' '));
  });

  it('moves money between members, with both histories, and rates in decimal strings', async () => {
    const [alice, bob] = await Promise.all([makeUser(t), makeUser(t)]);
    const from = await createWallet(alice);
    const to = await createWallet(bob);
    await fund(from.id, 'ETH', 10n ** 18n);
    const [result] = await transfer(alice, [{ requestId: requestId(), fromWalletId: from.id, toUserId: bob.userId, amount: '0.25', note: 'lunch' }]);
    assert.equal(result!.status, 'COMPLETED', JSON.stringify(result));
    assert.equal(await balanceOf(alice, from.id), '0.75');
    assert.equal(await balanceOf(bob, to.id), '0.25');
    const received = (await api(bob, 'GET', `/api/wallets/${to.id}/transactions`)).json();
    assert.equal(received.items[0].amount, '0.25');
    assert.equal(received.items[0].counterpartyUserId, alice.userId);
    assert.equal(received.items[0].note, 'lunch');
    const sent = (await api(alice, 'GET', `/api/wallets/${from.id}/transactions`)).json();
    assert.deepEqual(sent.items.map((line: { amount: string }) => line.amount), ['-0.25', '1'], 'newest first');

    const rates = (await api(alice, 'GET', '/api/exchange-rates')).json();
    assert.deepEqual(rates.rates.find((r: { from: string }) => r.from === 'ETH'), { from: 'ETH', to: 'USDT', rate: '3000' });
    assert.equal(rates.rates.find((r: { from: string }) => r.from === 'USDT').rate, '0.000333333333333333');
  });

  it('checks the whole request first: a bad item is a 400 and nothing is applied; only the balance is an item\'s own refusal', async () => {
    const [alice, bob, carol, dave] = await Promise.all([makeUser(t), makeUser(t), makeUser(t), makeUser(t)]);
    const from = await createWallet(alice, 'USDT');
    await createWallet(bob, 'USDT');
    const daves = await createWallet(dave, 'USDT');
    await fund(from.id, 'USDT', 5_000_000n);
    const good = { requestId: requestId(), fromWalletId: from.id, toUserId: bob.userId, amount: '1' };
    for (const [bad, code] of [
      [{ requestId: requestId(), fromWalletId: from.id, toUserId: bob.userId, amount: '0.0000001' }, 'AMOUNT_INVALID'],
      [{ requestId: requestId(), fromWalletId: from.id, toUserId: carol.userId, amount: '1' }, 'RECIPIENT_HAS_NO_WALLET'],
      [{ requestId: requestId(), fromWalletId: from.id, toUserId: alice.userId, amount: '1' }, 'TRANSFER_TO_SELF'],
      [{ requestId: requestId(), fromWalletId: daves.id, toUserId: bob.userId, amount: '1' }, 'WALLET_NOT_FOUND'],
      [{ requestId: requestId(), fromWalletId: 'no-such-wallet', toUserId: bob.userId, amount: '1' }, 'WALLET_NOT_FOUND'],
      [good, 'REQUEST_ID_REUSED'],
    ] as const) {
      const res = await api(alice, 'POST', '/api/wallet-transactions', [good, bad]);
      assert.equal(res.statusCode, 400, `${code}: ${res.body}`);
      assert.equal(res.json().code, code);
      assert.equal(await balanceOf(alice, from.id), '5', `${code}: nothing applied, the good item neither`);
    }
    const results = await transfer(alice, [
      { requestId: requestId(), fromWalletId: from.id, toUserId: bob.userId, amount: '5.000001' },
      { requestId: requestId(), fromWalletId: from.id, toUserId: bob.userId, amount: '5' },
    ]);
    assert.deepEqual(results.map((r) => r.error?.code ?? r.status), ['INSUFFICIENT_FUNDS', 'COMPLETED']);
    assert.equal(await balanceOf(alice, from.id), '0');
    const bad = await api(alice, 'POST', '/api/wallet-transactions', [{ requestId: requestId(), fromWalletId: from.id, toUserId: bob.userId, amount: 5 }]);
    assert.equal(bad.statusCode, 400, 'amounts are strings, never numbers');
    assert.equal((await api(alice, 'POST', '/api/wallet-transactions', [])).statusCode, 400);
  });

  it('pays the recipient\'s oldest wallet of the currency, one made after a refusal too (a wallet not found is not remembered)', async () => {
    const [alice, carol] = await Promise.all([makeUser(t), makeUser(t)]);
    const from = await createWallet(alice, 'USDT');
    await fund(from.id, 'USDT', 3_000_000n);
    const item = () => ({ requestId: requestId(), fromWalletId: from.id, toUserId: carol.userId, amount: '1' });
    const refused = await api(alice, 'POST', '/api/wallet-transactions', [item()]);
    assert.deepEqual([refused.statusCode, refused.json().code], [400, 'RECIPIENT_HAS_NO_WALLET']);
    const first = await createWallet(carol, 'USDT');
    assert.deepEqual((await transfer(alice, [item()])).map((r) => r.status), ['COMPLETED']);
    const second = await createWallet(carol, 'USDT');
    assert.deepEqual((await transfer(alice, [item(), item()])).map((r) => r.status), ['COMPLETED', 'COMPLETED']);
    assert.deepEqual([await balanceOf(carol, first.id), await balanceOf(carol, second.id)], ['3', '0']);
  });

  it('answers a repeated requestId with the first result, and refuses it with other fields', async () => {
    const [alice, bob] = await Promise.all([makeUser(t), makeUser(t)]);
    const from = await createWallet(alice);
    const to = await createWallet(bob);
    await fund(from.id, 'ETH', 3n * 10n ** 18n);
    const item = { requestId: requestId(), fromWalletId: from.id, toUserId: bob.userId, amount: '1' };
    const [first] = await transfer(alice, [item]);
    const [again] = await transfer(alice, [item]);
    assert.equal(again!.id, first!.id);
    assert.equal(await balanceOf(bob, to.id), '1');
    const reused = await api(alice, 'POST', '/api/wallet-transactions', [{ ...item, amount: '2' }]);
    assert.equal(reused.statusCode, 400);
    assert.equal(reused.json().code, 'REQUEST_ID_REUSED');

    // 100 identical requests at once: one debit.
    const same = { requestId: requestId(), fromWalletId: from.id, toUserId: bob.userId, amount: '0.5' };
    const answers = await Promise.all(Array.from({ length: 100 }, () => transfer(alice, [same])));
    assert.equal(new Set(answers.map(([r]) => r!.id)).size, 1);
    assert.ok(answers.every(([r]) => r!.status === 'COMPLETED'));
    assert.equal(await balanceOf(alice, from.id), '1.5');
  });

  it('100 different transfers at once never overdraw', async () => {
    const [alice, bob] = await Promise.all([makeUser(t), makeUser(t)]);
    const from = await createWallet(alice, 'USDT');
    const to = await createWallet(bob, 'USDT');
    await fund(from.id, 'USDT', 50_000_000n);
    const answers = await Promise.all(Array.from({ length: 100 }, () => transfer(alice, [{ requestId: requestId(), fromWalletId: from.id, toUserId: bob.userId, amount: '1' }])));
    const statuses = answers.map(([r]) => r!.error?.code ?? r!.status);
    assert.equal(statuses.filter((s) => s === 'COMPLETED').length, 50);
    assert.equal(statuses.filter((s) => s === 'INSUFFICIENT_FUNDS').length, 50);
    assert.equal(await balanceOf(alice, from.id), '0');
    assert.equal(await balanceOf(bob, to.id), '50');
  });

  it('needs a biometric confirmation over exactly these fields when the device has a key', async () => {
    const [alice, bob] = await Promise.all([makeUser(t), makeUser(t)]);
    const from = await createWallet(alice);
    await createWallet(bob);
    await fund(from.id, 'ETH', 10n ** 18n);
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const signed = (message: string) => sign('sha256', Buffer.from(message), privateKey).toString('base64');
    const nonce = async () => (await t.app.inject({ method: 'POST', url: '/api/devices/biometric-key/nonce', headers: bearer(alice.accessToken) })).json().nonce as string;
    const n0 = await nonce();
    const enrolled = await t.app.inject({
      method: 'PUT',
      url: '/api/devices/biometric-key',
      headers: bearer(alice.accessToken),
      payload: { publicKey: publicKey.export({ format: 'der', type: 'spki' }).toString('base64'), algorithm: 'ECDSA_P256', nonce: n0, signature: signed(`BIOMETRIC_KEY_ENROLL_V1|${n0}`) },
    });
    assert.equal(enrolled.statusCode, 204, enrolled.body);

    const item = { requestId: requestId(), fromWalletId: from.id, toUserId: bob.userId, amount: '0.1' };
    const unsigned = await api(alice, 'POST', '/api/wallet-transactions', [item]);
    assert.deepEqual([unsigned.statusCode, unsigned.json().code], [403, 'BIOMETRIC_CONFIRMATION_REQUIRED']);
    const n1 = await nonce();
    const otherFields = await api(alice, 'POST', '/api/wallet-transactions', [{ ...item, biometric: { nonce: n1, signature: signed(transferSigned(n1, { ...item, amount: '0.01' })) } }]);
    assert.deepEqual([otherFields.statusCode, otherFields.json().code], [403, 'BIOMETRIC_CONFIRMATION_INVALID']);
    assert.equal(await balanceOf(alice, from.id), '1');
    const n2 = await nonce();
    const [good] = await transfer(alice, [{ ...item, biometric: { nonce: n2, signature: signed(transferSigned(n2, item)) } }]);
    assert.equal(good!.status, 'COMPLETED', JSON.stringify(good));
    assert.equal(await balanceOf(alice, from.id), '0.9');
  });

  it('the reconciler finishes an entry a crash left after its debit, and the books balance', async () => {
    const [alice, bob] = await Promise.all([makeUser(t), makeUser(t)]);
    const from = await createWallet(alice);
    const to = await createWallet(bob);
    await fund(from.id, 'ETH', 10n ** 18n);
    const journal = t.db.collection<JournalDoc>('ledger_journal');
    const accounts = t.db.collection<AccountDoc>('ledger_accounts');
    // What a process that died right after the debit step leaves behind.
    const id = `transfer:${alice.userId}:crashed`;
    const amount = toStored(4n * 10n ** 17n);
    const past = new Date(Date.now() - 120_000);
    await journal.insertOne({ _id: id, kind: 'TRANSFER', currency: 'ETH', amount, debit: from.id, credit: to.id, state: 'PENDING', fingerprint: 'x', memo: { fromUserId: alice.userId, toUserId: bob.userId }, failure: null, createdAt: past, updatedAt: past });
    await accounts.updateOne({ _id: from.id }, { $inc: { available: toStored(-(4n * 10n ** 17n)) }, $push: { pending: id } });
    assert.equal(await balanceOf(bob, to.id), '0');

    const report = await t.ctx.services.walletsReconciler.run();
    assert.ok(report.finished >= 1);
    assert.equal((await journal.findOne({ _id: id }))?.state, 'DONE');
    assert.equal(await balanceOf(alice, from.id), '0.6');
    assert.equal(await balanceOf(bob, to.id), '0.4');
    assert.ok(report.ok, JSON.stringify(report));
    assert.deepEqual(report.totals, { ETH: '0', USDT: '0' });
    assert.equal((await t.ctx.services.walletsReconciler.run()).finished, 0, 'once finished, nothing is left');
  });

  it('a step applied by a process that stalled while the reconciler finished its entry is taken back', async () => {
    const [alice, bob] = await Promise.all([makeUser(t), makeUser(t)]);
    const from = await createWallet(alice);
    const to = await createWallet(bob);
    await fund(from.id, 'ETH', 10n ** 18n);
    const journal = t.db.collection<JournalDoc>('ledger_journal');
    // A process wrote the entry two minutes ago and stalled (a long pause) before its first step.
    const past = new Date(Date.now() - 120_000);
    const stalled: JournalDoc = { _id: `transfer:${alice.userId}:stalled`, kind: 'TRANSFER', currency: 'ETH', amount: toStored(3n * 10n ** 17n), debit: from.id, credit: to.id, state: 'PENDING', fingerprint: 'x', memo: { fromUserId: alice.userId, toUserId: bob.userId }, failure: null, createdAt: past, updatedAt: past };
    await journal.insertOne(stalled);
    assert.ok((await t.ctx.services.walletsReconciler.run()).finished >= 1);
    assert.equal((await journal.findOne({ _id: stalled._id }))?.state, 'DONE');
    // It wakes up and goes on with what it read then: its debit and credit are reversed, nothing moves twice.
    await ledgerOf(t).advance(stalled);
    assert.equal(await balanceOf(alice, from.id), '0.7');
    assert.equal(await balanceOf(bob, to.id), '0.3');
    assert.ok((await t.ctx.services.walletsReconciler.run()).ok);
  });

  it('a step applied by a stalled process after the reconciler FAILED its entry is taken back', async () => {
    const [alice, bob] = await Promise.all([makeUser(t), makeUser(t)]);
    const from = await createWallet(alice);
    const to = await createWallet(bob);
    const journal = t.db.collection<JournalDoc>('ledger_journal');
    // Written two minutes ago, then the process stalled; the wallet was empty when the reconciler came.
    const past = new Date(Date.now() - 120_000);
    const stalled: JournalDoc = { _id: `transfer:${alice.userId}:stalled-short`, kind: 'TRANSFER', currency: 'ETH', amount: toStored(2n * 10n ** 17n), debit: from.id, credit: to.id, state: 'PENDING', fingerprint: 'x', memo: { fromUserId: alice.userId, toUserId: bob.userId }, failure: null, createdAt: past, updatedAt: past };
    await journal.insertOne(stalled);
    await t.ctx.services.walletsReconciler.run();
    assert.equal((await journal.findOne({ _id: stalled._id }))?.state, 'FAILED');
    // Money arrives; the process wakes up and goes on with what it read then: nothing may move.
    await fund(from.id, 'ETH', 10n ** 18n);
    await ledgerOf(t).advance(stalled);
    assert.equal(await balanceOf(alice, from.id), '1');
    assert.equal(await balanceOf(bob, to.id), '0');
    const accounts = t.db.collection<AccountDoc>('ledger_accounts');
    assert.deepEqual((await accounts.findOne({ _id: from.id }))?.pending, []);
    assert.deepEqual((await accounts.findOne({ _id: to.id }))?.pending, []);
    assert.ok((await t.ctx.services.walletsReconciler.run()).ok);
  });

  it('the reconciler does not take an account that money moved while it read for one that is off', async () => {
    const s = await makeUser(t);
    const wallet = await createWallet(s, 'USDT');
    // Every time the check sums the entries, a deposit has just moved money into the wallet, after
    // the check read its balance: each of its three tries sees the wallet off by the new deposit.
    const repo = t.ctx.repos.ledger;
    const sums = repo.sumsByAccount.bind(repo);
    let deposits = 0;
    repo.sumsByAccount = async () => {
      deposits++;
      await fund(wallet.id, 'USDT', 7n);
      return sums();
    };
    try {
      const report = await t.ctx.services.walletsReconciler.run();
      assert.ok(deposits >= 1);
      assert.ok(!report.mismatchedAccounts.includes(wallet.id), JSON.stringify(report));
      assert.ok(!report.mismatchedAccounts.includes('system:chain:USDT'), JSON.stringify(report));
    } finally {
      repo.sumsByAccount = sums;
    }
    assert.ok((await t.ctx.services.walletsReconciler.run()).ok);
  });

  it('the reconciler reports books that do not balance, and changes nothing', async () => {
    const s = await makeUser(t);
    const wallet = await createWallet(s, 'USDT');
    await fund(wallet.id, 'USDT', 1_000_000n);
    // Money appearing without an entry.
    await t.db.collection<AccountDoc>('ledger_accounts').updateOne({ _id: wallet.id }, { $inc: { available: toStored(5n) } });
    const report = await t.ctx.services.walletsReconciler.run();
    assert.equal(report.ok, false);
    assert.deepEqual(report.mismatchedAccounts, [wallet.id]);
    assert.equal(report.totals.USDT, '0.000005');
    assert.equal(await balanceOf(s, wallet.id), '1.000005', 'reported, not corrected');
    await t.db.collection<AccountDoc>('ledger_accounts').updateOne({ _id: wallet.id }, { $inc: { available: toStored(-5n) } });
    assert.ok((await t.ctx.services.walletsReconciler.run()).ok);
  });

  it('any sequence of transfers keeps the books balanced (property)', async () => {
    const people = await Promise.all([makeUser(t), makeUser(t), makeUser(t)]);
    const wallets = await Promise.all(people.map((p) => createWallet(p, 'USDT')));
    await Promise.all(wallets.map((w) => fund(w.id, 'USDT', 20_000_000n)));
    const step = fc.record({ from: fc.nat({ max: 2 }), to: fc.nat({ max: 2 }), units: fc.bigInt({ min: 1n, max: 30_000_000n }) });
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 8 }), async (steps) => {
        await Promise.all(
          steps.map(async (s) => {
            const items = [{ requestId: requestId(), fromWalletId: wallets[s.from]!.id, toUserId: people[s.to]!.userId, amount: formatAmount(s.units, 'USDT') }];
            if (s.from !== s.to) return transfer(people[s.from]!, items);
            // To oneself: refused whole, before anything moves.
            const res = await api(people[s.from]!, 'POST', '/api/wallet-transactions', items);
            assert.deepEqual([res.statusCode, res.json().code], [400, 'TRANSFER_TO_SELF']);
            return [];
          }),
        );
        const balances = await Promise.all(wallets.map((w, i) => balanceOf(people[i]!, w.id)));
        const total = balances.reduce((sum, b) => sum + (b === '0' ? 0n : parseAmount(b, 'USDT')!), 0n);
        assert.equal(total, 60_000_000n, 'transfers between members neither make nor lose money');
        assert.ok(balances.every((b) => !b.startsWith('-')));
        const report = await t.ctx.services.walletsReconciler.run();
        assert.ok(report.ok, JSON.stringify(report));
      }),
      { numRuns: 15 },
    );
  });
});
