// `npm run bench:wallets`: transfers between members over HTTP against a real api process, 32 in flight
// for LOAD_SECONDS (throughput and latency percentiles); then the reconciler's time over ENTRIES ledger
// entries (written straight to the database as finished entries with their lines, balances to match).
// Then WITHDRAWALS withdrawals (USDT, to fresh addresses) from the members at once, timed from the first
// request to every one `sent` on the chain, with one worker process signing and broadcasting.
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { TokenService } from '../dist/src/auth/tokens.js';
import { Ledger } from '../dist/src/wallets/ledger.js';
import { toStored } from '../dist/src/wallets/money.js';
import { freePort } from '../scripts/stack.mjs';
import { insertDevices, percentile, requestJson, spawnRole, stopAll, startBench } from './common.mjs';

const USERS = Number(process.env.USERS ?? 64);
const IN_FLIGHT = Number(process.env.IN_FLIGHT ?? 32);
const LOAD_SECONDS = Number(process.env.LOAD_SECONDS ?? 10);
const ENTRIES = Number(process.env.ENTRIES ?? 20_000);
const WITHDRAWALS = Number(process.env.WITHDRAWALS ?? 100);
const log = (message) => process.stderr.write(`[bench] ${message}\n`);

const { tmp, stack, env, config, ctx, children, port } = await startBench('wallets', { WALLET_DAILY_LIMIT_USDT: '100000000', DEPOSIT_CONFIRMATIONS: '1' });
const ledger = new Ledger({ repo: ctx.repos.ledger, clock: () => new Date(), logger: ctx.platform.logger });

/** USERS members with a device, a token and a funded USDT wallet each. */
async function seedMembers() {
  const db = ctx.platform.db;
  const at = new Date();
  const tokens = new TokenService(config.JWT_SECRET, 6 * 3600, 300);
  const people = [];
  for (let i = 0; i < USERS; i++) people.push({ userId: `wu${i}`, deviceId: `wd${i}` });
  await db.collection('users').insertMany(people.map((p, i) => ({ _id: p.userId, phone: `+1777${String(i).padStart(7, '0')}`, displayName: null, language: 'en', twoFactor: { enabled: false, secret: null, pendingSecret: null, lastStep: 0 }, createdAt: at, updatedAt: at })));
  await insertDevices(db, people.map((p) => ({ _id: p.deviceId, userId: p.userId, name: 'bench', platform: 'OTHER', createdAt: at, lastSeenAt: at, revokedAt: null, refreshTokenHash: randomUUID(), refreshExpiresAt: at, spentRefreshHashes: [], pushToken: null, voipPushToken: null })));
  const chain = await ledger.ensureSystemAccount('chain', 'USDT');
  for (const p of people) {
    p.token = await tokens.signAccess({ userId: p.userId, deviceId: p.deviceId });
    p.walletId = (await ctx.services.wallets.create(p, { currency: 'USDT' })).id;
    await ledger.post({ id: `bench-fund:${p.walletId}`, kind: 'DEPOSIT', currency: 'USDT', amount: 100_000_000_000n, debit: chain, credit: p.walletId, fingerprint: 'bench', memo: {} });
  }
  return people;
}

const get = async (url, token) => JSON.parse((await requestJson({ port, agent }, 'GET', url, token)).body);
const post = (url, token, body) => requestJson({ port, agent }, 'POST', url, token, body);

/** WITHDRAWALS at once; seconds from the first request until every one is `sent` (or later). */
async function withdrawals(people) {
  const started = performance.now();
  const made = await Promise.all(
    Array.from({ length: WITHDRAWALS }, async (_, i) => {
      const p = people[i % people.length];
      const to = `0x${randomUUID().replaceAll('-', '').padEnd(40, '7').slice(0, 40)}`;
      const res = await post('/api/wallet-withdrawals', p.token, { requestId: `bench-wd-${i}-${randomUUID()}`, walletId: p.walletId, toAddress: to, amount: '1' });
      if (res.status !== 200) throw new Error(`withdrawal answered ${res.status}: ${res.body}`);
      return { id: JSON.parse(res.body).id, token: p.token };
    }),
  );
  const waiting = new Set(made);
  while (waiting.size > 0) {
    for (const w of [...waiting]) {
      const status = (await get(`/api/wallet-withdrawals/${w.id}`, w.token)).status;
      if (status === 'sent' || status === 'confirmed') waiting.delete(w);
      else if (status === 'refunded' || status === 'refused') throw new Error(`a withdrawal was ${status}`);
    }
    if (waiting.size > 0) await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return (performance.now() - started) / 1000;
}

/** The api's ledger group counters, from its /metrics. */
async function ledgerGroups(opsPort) {
  const text = await (await fetch(`http://127.0.0.1:${opsPort}/metrics`)).text();
  const value = (name) => Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(text)?.[1] ?? NaN);
  return { groups: value('ledger_groups_written_total'), entries: value('ledger_group_entries_total') };
}

const agent = new http.Agent({ keepAlive: true, maxSockets: IN_FLIGHT });

async function transfers(people) {
  const latencies = [];
  let refused = 0;
  let n = 0;
  const until = performance.now() + LOAD_SECONDS * 1000;
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (performance.now() < until) {
        const i = n++ % people.length;
        const from = people[i];
        const to = people[(i + 1 + (n % (people.length - 1))) % people.length];
        const started = performance.now();
        const res = await post('/api/wallet-transactions', from.token, [{ requestId: `bench-${n}-${randomUUID()}`, fromWalletId: from.walletId, toUserId: to.userId, amount: '0.01' }]);
        latencies.push(performance.now() - started);
        if (res.status !== 200 || !res.body.includes('"COMPLETED"')) refused++;
      }
    }),
  );
  return { latencies: latencies.sort((a, b) => a - b), refused };
}

/** ENTRIES finished entries, written in bulk, the accounts' balances set to match. */
async function seedEntries() {
  const { journal, accounts } = ctx.repos.ledger;
  const wallets = [];
  const at = new Date();
  for (let i = 0; i < 200; i++) wallets.push({ _id: `bench-w${i}`, kind: 'WALLET', currency: 'ETH', userId: `bench-owner${i}`, name: 'bench', available: toStored(0n), held: toStored(0n), pending: [], overdraft: false, createdAt: at, updatedAt: at });
  const balance = new Map(wallets.map((w) => [w._id, 0n]));
  const chain = await ledger.ensureSystemAccount('chain', 'ETH');
  balance.set(chain, 0n);
  const batch = 5_000;
  for (let start = 0; start < ENTRIES; start += batch) {
    const entries = [];
    for (let k = start; k < Math.min(ENTRIES, start + batch); k++) {
      const credit = wallets[k % wallets.length]._id;
      const debit = chain;
      const amount = BigInt(1 + (k % 1000)) * 10n ** 12n;
      balance.set(debit, balance.get(debit) - amount);
      balance.set(credit, balance.get(credit) + amount);
      const entryId = `bench-entry-${k}`;
      entries.push({ _id: entryId, kind: 'DEPOSIT', currency: 'ETH', amount: toStored(amount), debit, credit, state: 'DONE', fingerprint: 'bench', memo: {}, failure: null, createdAt: at, updatedAt: at });
    }
    await journal.insertMany(entries, { ordered: false });
  }
  await accounts.insertMany(wallets.map((w) => ({ ...w, available: toStored(balance.get(w._id)) })));
  await accounts.updateOne({ _id: chain }, { $inc: { available: toStored(balance.get(chain)) } });
}

try {
  const people = await seedMembers();
  const opsPort = await freePort();
  await spawnRole('api', { ...env, OPS_PORT: String(opsPort) }, children);
  // Warm-up.
  for (let i = 0; i < 50; i++) await post('/api/wallet-transactions', people[0].token, [{ requestId: `warm-${i}-${randomUUID()}`, fromWalletId: people[0].walletId, toUserId: people[1].userId, amount: '0.01' }]);
  const groupsBefore = await ledgerGroups(opsPort);
  const load = await transfers(people);
  const groupsAfter = await ledgerGroups(opsPort);
  const perSecond = load.latencies.length / LOAD_SECONDS;
  const books = await ctx.services.walletsReconciler.run();
  if (!books.ok) throw new Error(`the books do not balance after the load: ${JSON.stringify(books)}`);
  console.log(`transfers between ${USERS} members, ${IN_FLIGHT} in flight for ${LOAD_SECONDS} s, one api process, mongo-java-server (memory):`);
  console.log(`  ${perSecond.toFixed(0)} transfers/s, p50 ${percentile(load.latencies, 50).toFixed(1)} ms, p99 ${percentile(load.latencies, 99).toFixed(1)} ms, ${load.refused} refused; books balance after (${books.entriesChecked} entries)`);
  const entriesPerGroup = (groupsAfter.entries - groupsBefore.entries) / (groupsAfter.groups - groupsBefore.groups);
  console.log(`  ledger group commit: ${entriesPerGroup.toFixed(1)} entries per group (${groupsAfter.groups - groupsBefore.groups} groups), so ${(4 / entriesPerGroup).toFixed(2)} ledger commands per transfer before its answer (4 steps a group; the marks and DONE after it are grouped again)`);

  await spawnRole('worker', env, children);
  const seconds = await withdrawals(people);
  console.log(`  ${WITHDRAWALS} withdrawals at once, to sent on the chain with one worker: ${seconds.toFixed(1)} s (${(WITHDRAWALS / seconds).toFixed(1)} withdrawals/s)`);

  log(`writing ${ENTRIES} finished ledger entries`);
  await seedEntries();
  const reconcileStarted = performance.now();
  const report = await ctx.services.walletsReconciler.run();
  const reconcileSeconds = (performance.now() - reconcileStarted) / 1000;
  if (!report.ok) throw new Error(`the seeded books do not balance: ${JSON.stringify(report).slice(0, 500)}`);
  console.log(`  reconciler over ${report.entriesChecked} entries: ${reconcileSeconds.toFixed(2)} s (${((reconcileSeconds * 100_000) / report.entriesChecked).toFixed(2)} s per 100,000)`);
} finally {
  agent.destroy();
  await stopAll(children, stack, tmp, ctx);
}
