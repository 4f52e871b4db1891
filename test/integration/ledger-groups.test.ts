import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { httpAs, makeUser } from '../helpers/factories.js';
import { countRoundTrips } from '../helpers/round-trips.js';
import { ledgerOf, walletWith } from '../helpers/wallets.js';
import { AccountClosed, InsufficientFunds, type EntryRequest } from '../../src/wallets/ledger.js';
import { nextTurn } from '../../src/platform/after-answer.js';
import { hasMoved, type AccountDoc, type JournalDoc } from '../../src/wallets/ledger.repo.js';
import { fromStored, toStored } from '../../src/wallets/money.js';
import { WalletsErrors } from '../../src/wallets/wallets.errors.js';

/**
 * The ledger's group commit: entries posted together go to the database as one command per step, each
 * keeping the outcome it would have had alone (in order, for two debits of one wallet).
 */
describe('ledger entries posted together (group commit)', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp();
  });
  after(() => t.close());

  const accounts = () => t.db.collection<AccountDoc>('ledger_accounts');
  const journal = () => t.db.collection<JournalDoc>('ledger_journal');
  const available = async (id: string) => fromStored(must(await accounts().findOne({ _id: id })).available);
  const must = <T>(value: T | null | undefined): T => {
    assert.ok(value !== null && value !== undefined);
    return value;
  };
  const transfer = (debit: string, credit: string, amount: bigint, id = `group:${randomUUID()}`): EntryRequest => ({ id, kind: 'TRANSFER', currency: 'USDT', amount, debit, credit, fingerprint: `${debit}>${credit}:${amount}`, memo: {} });

  async function twoWallets(units: bigint) {
    const [alice, bob] = await Promise.all([makeUser(t), makeUser(t)]);
    return { from: await walletWith(t, alice, 'USDT', units), to: await walletWith(t, bob, 'USDT', 0n) };
  }

  it('writes a group with one command per step, answers each entry APPLIED (in both histories) when told what to finish after, then makes it DONE with no marks left', async () => {
    const { from, to } = await twoWallets(1_000n);
    const ledger = ledgerOf(t);
    const requests = Array.from({ length: 32 }, () => transfer(from, to, 10n));
    const { mongo, after, result } = await countRoundTrips(t.db.client, () => Promise.all(ledger.postAll(requests, { afterAnswer: nextTurn })));
    assert.deepEqual(mongo, ['insert ledger_journal', 'update ledger_accounts', 'update ledger_accounts', 'update ledger_journal']);
    assert.deepEqual(after.mongo, ['update ledger_accounts', 'update ledger_journal'], 'the marks cleared and DONE, after the answers, for the whole group');
    assert.deepEqual(new Set(result.map((entry) => entry.state)), new Set(['APPLIED']));
    assert.equal(await available(from), 680n);
    assert.equal(await available(to), 320n);
    assert.equal(await journal().countDocuments({ _id: { $in: requests.map((r) => r.id) }, state: 'DONE' }), 32);
    for (const account of [from, to]) {
      const history = await t.ctx.repos.ledger.pageOfHistory(account, 100, 0);
      assert.equal(history.total, account === from ? 33 : 32, 'the 32 entries, and the deposit that funded the sender');
      assert.ok(requests.every((r) => history.items.some((entry) => entry._id === r.id)), 'every entry is in both histories');
    }
    assert.deepEqual((await accounts().findOne({ _id: from }))?.pending, []);
    assert.deepEqual((await accounts().findOne({ _id: to }))?.pending, []);
  });

  it('refuses an entry whose credited wallet was closed (its owner deleted their account): FAILED, the debit given back, in a group and when the reconciler advances one', async () => {
    const { from, to } = await twoWallets(100n);
    assert.ok(await t.ctx.repos.ledger.closeIfUnchanged(must(await accounts().findOne({ _id: to })), new Date()));
    const ledger = ledgerOf(t);
    const grouped = transfer(from, to, 40n);
    await assert.rejects(ledger.post(grouped), AccountClosed);
    assert.deepEqual(await journal().findOne({ _id: grouped.id }, { projection: { state: 1, failure: 1 } }), { _id: grouped.id, state: 'FAILED', failure: 'ACCOUNT_CLOSED' });
    assert.equal(await available(from), 100n, 'the debit given back');
    assert.equal(await available(to), 0n);

    // An entry a crash left PENDING after its debit: the reconciler's path gives the debit back too.
    const stranded = transfer(from, to, 30n);
    const now = new Date();
    const entry: JournalDoc = { _id: stranded.id, kind: 'TRANSFER', currency: 'USDT', amount: toStored(30n), debit: from, credit: to, state: 'PENDING', fingerprint: stranded.fingerprint, memo: {}, failure: null, createdAt: now, updatedAt: now };
    await journal().insertOne(entry);
    assert.ok(await t.ctx.repos.ledger.applyDebit(entry, now));
    assert.equal(await available(from), 70n);
    const advanced = await ledger.advance(entry);
    assert.equal(advanced.state, 'FAILED');
    assert.equal(advanced.failure, 'ACCOUNT_CLOSED');
    assert.equal(await available(from), 100n);
    // Advancing it again changes nothing: the debit is given back once.
    await ledger.advance(advanced);
    assert.equal(await available(from), 100n);
    assert.deepEqual((await accounts().findOne({ _id: from }))?.pending, []);
    assert.deepEqual((await accounts().findOne({ _id: to }))?.pending, []);
  });

  it('decides two debits of one wallet in the order posted: the first is paid, the second FAILED, nothing else moves', async () => {
    const { from, to } = await twoWallets(100n);
    const [first, second, third] = [transfer(from, to, 70n), transfer(from, to, 70n), transfer(from, to, 30n)];
    const outcomes = await Promise.allSettled(ledgerOf(t).postAll([first, second, third]));
    assert.equal(outcomes[0]?.status, 'fulfilled');
    assert.ok(outcomes[1]?.status === 'rejected' && outcomes[1].reason instanceof InsufficientFunds);
    assert.equal(outcomes[2]?.status, 'fulfilled', 'what is left after the first still pays the third');
    assert.equal((await journal().findOne({ _id: second.id }))?.state, 'FAILED');
    assert.equal((await journal().findOne({ _id: second.id }))?.failure, 'INSUFFICIENT_FUNDS');
    assert.equal(await available(from), 0n);
    assert.equal(await available(to), 100n);
    assert.ok(!(await t.ctx.repos.ledger.pageOfHistory(from, 100, 0)).items.some((entry) => entry._id === second.id), 'a FAILED entry is in no history');
    assert.ok((await t.ctx.services.walletsReconciler.run()).ok);
  });

  it('answers a key used before from its entry, and refuses one reused with other fields, inside a group', async () => {
    const { from, to } = await twoWallets(100n);
    const ledger = ledgerOf(t);
    const earlier = transfer(from, to, 10n);
    const firstTime = await ledger.post(earlier);
    const same = { ...earlier };
    const reused = { ...transfer(from, to, 20n), id: earlier.id };
    const twice = transfer(from, to, 5n);
    const outcomes = await Promise.allSettled(ledger.postAll([same, reused, twice, { ...twice }, transfer(from, to, 1n)]));
    assert.ok(outcomes[0]?.status === 'fulfilled' && outcomes[0].value._id === firstTime._id && hasMoved(outcomes[0].value));
    assert.ok(outcomes[1]?.status === 'rejected' && (outcomes[1].reason as { code?: string }).code === WalletsErrors.REQUEST_ID_REUSED().code);
    assert.ok(outcomes[2]?.status === 'fulfilled' && outcomes[3]?.status === 'fulfilled' && outcomes[2].value._id === outcomes[3].value._id, 'the same key twice in one group posts once');
    assert.equal(outcomes[4]?.status, 'fulfilled');
    assert.equal(await available(from), 84n, 'each key moved money once: 10 + 5 + 1');
    assert.equal(await available(to), 16n);
    assert.ok((await t.ctx.services.walletsReconciler.run()).ok);
  });

  it('posts a transfer request\'s items as one group, and /metrics counts groups and their entries', async () => {
    const [alice, bob] = await Promise.all([makeUser(t), makeUser(t)]);
    const from = await walletWith(t, alice, 'USDT', 1_000n);
    await walletWith(t, bob, 'USDT', 0n);
    const metrics = async () => {
      const text = (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
      const value = (name: string) => Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(text)?.[1]);
      return { groups: value('ledger_groups_written_total'), entries: value('ledger_group_entries_total') };
    };
    const before = await metrics();
    assert.ok(Number.isInteger(before.groups) && Number.isInteger(before.entries), JSON.stringify(before));
    const items = Array.from({ length: 3 }, () => ({ requestId: randomUUID(), fromWalletId: from, toUserId: bob.userId, amount: '0.0001' }));
    const res = await httpAs(() => t)(alice, 'POST', '/api/wallet-transactions', items);
    assert.deepEqual((res.json() as { status: string }[]).map((item) => item.status), ['COMPLETED', 'COMPLETED', 'COMPLETED'], res.body);
    assert.deepEqual(await metrics(), { groups: before.groups + 1, entries: before.entries + 3 });
  });

  it('reads the earlier entries and the wallets of requests that arrive together once for all, each answered with its own', async () => {
    const bob = await makeUser(t);
    const to = await walletWith(t, bob, 'USDT', 0n);
    const senders = await Promise.all(Array.from({ length: 8 }, async () => {
      const sender = await makeUser(t);
      return { sender, from: await walletWith(t, sender, 'USDT', 100_000n) };
    }));
    const api = httpAs(() => t);
    const { mongo, result } = await countRoundTrips(t.db.client, () =>
      Promise.all(senders.map(({ sender, from }, i) => api(sender, 'POST', '/api/wallet-transactions', [{ requestId: randomUUID(), fromWalletId: from, toUserId: bob.userId, amount: `0.00${i + 1}` }]))),
    );
    assert.deepEqual(result.map((res) => (res.json() as { status: string }[])[0]?.status), senders.map(() => 'COMPLETED'));
    for (const read of ['find ledger_journal', 'find ledger_accounts']) {
      const count = mongo.filter((command) => command === read).length;
      assert.ok(count >= 1 && count < senders.length, `${count} × ${read} for ${senders.length} requests`);
    }
    assert.equal(await available(to), 36_000n, '0.001 + … + 0.008 USDT in its smallest unit');
    for (const [i, { from }] of senders.entries()) assert.equal(await available(from), 100_000n - BigInt(i + 1) * 1_000n);
  });

  it('leaves an entry whose credit cannot be applied PENDING for the reconciler to report, and finishes the others', async () => {
    const { from, to } = await twoWallets(100n);
    const stray = transfer(from, `missing-wallet-${randomUUID()}`, 40n);
    const good = transfer(from, to, 25n);
    const outcomes = await Promise.allSettled(ledgerOf(t).postAll([stray, good]));
    assert.ok(outcomes[0]?.status === 'rejected' && /cannot credit/.test(String(outcomes[0].reason)));
    assert.equal(outcomes[1]?.status, 'fulfilled');
    assert.equal((await journal().findOne({ _id: stray.id }))?.state, 'PENDING');
    assert.equal((await journal().findOne({ _id: good.id }))?.state, 'DONE', 'without an answer to finish after, answered DONE');
    assert.equal(await available(to), 25n);
    // The stray entry's debit stays marked on the wallet until an operator settles it; nothing else is held.
    assert.deepEqual((await accounts().findOne({ _id: from }))?.pending, [stray.id]);
    // Settled by hand here (the entry undone), so the books balance again.
    await journal().deleteOne({ _id: stray.id });
    await accounts().updateOne({ _id: from }, { $inc: { available: toStored(40n) }, $pull: { pending: stray.id } });
    assert.ok((await t.ctx.services.walletsReconciler.run()).ok);
  });
});
