import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { startTestApp, startTestWorkers, type Session, type TestApp } from '../helpers/app.js';
import { httpAs, makeUser } from '../helpers/factories.js';
import type { Workers } from '../../workers/main.js';
import { walletWith } from '../helpers/wallets.js';
import { formatAmount, type Currency } from '../../src/wallets/money.js';

type Step =
  | { kind: 'transfer'; from: number; to: number; currency: Currency; units: bigint }
  | { kind: 'withdraw'; who: number; currency: Currency; units: bigint }
  | { kind: 'swap'; who: number; from: Currency; units: bigint };

const units = (currency: Currency) => (currency === 'ETH' ? fc.bigInt({ min: 1n, max: 4n * 10n ** 17n }) : fc.bigInt({ min: 1n, max: 1_500_000_000n }));
const currency = fc.constantFrom<Currency>('ETH', 'USDT');
const step: fc.Arbitrary<Step> = fc.oneof(
  currency.chain((c) => fc.record({ kind: fc.constant('transfer' as const), from: fc.nat({ max: 2 }), to: fc.nat({ max: 2 }), currency: fc.constant(c), units: units(c) })),
  currency.chain((c) => fc.record({ kind: fc.constant('withdraw' as const), who: fc.nat({ max: 2 }), currency: fc.constant(c), units: units(c) })),
  currency.chain((c) => fc.record({ kind: fc.constant('swap' as const), who: fc.nat({ max: 2 }), from: fc.constant(c), units: units(c) })),
);

/**
 * Random sequences of transfers, withdrawals (on the real chain) and swaps, run at once: whatever is
 * refused, the books balance afterwards (every account equals its lines, totals are zero, no wallet is
 * negative, and the chain holds what members are owed).
 */
describe('the books under random transfers, withdrawals and swaps (property)', () => {
  let t: TestApp;
  let workers: Workers;
  const api = httpAs(() => t);
  const people: Session[] = [];
  const wallets: Record<Currency, string>[] = [];
  before(async () => {
    t = await startTestApp({ WALLET_DAILY_LIMIT_ETH: '1000', WALLET_DAILY_LIMIT_USDT: '3000000', HOUSE_LIQUIDITY_ETH: '2', HOUSE_LIQUIDITY_USDT: '6000', DEPOSIT_CONFIRMATIONS: '1' });
    workers = await startTestWorkers(t);
    for (let i = 0; i < 3; i++) {
      const s = await makeUser(t);
      const mine = {} as Record<Currency, string>;
      for (const [c, amount] of [['ETH', 10n ** 18n], ['USDT', 3_000_000_000n]] as const) {
        mine[c] = await walletWith(t, s, c, amount);
      }
      people.push(s);
      wallets.push(mine);
    }
  });
  after(async () => {
    await workers.close();
    await t.close();
  });

  let n = 0;
  const succeeded = { transfer: 0, withdraw: 0, swap: 0 };
  async function run(s: Step): Promise<number> {
    const status = await attempt(s);
    if (status === 200) succeeded[s.kind]++;
    return status;
  }
  async function attempt(s: Step): Promise<number> {
    const requestId = `prop-${Date.now()}-${++n}`;
    if (s.kind === 'transfer') {
      const res = await api(people[s.from]!, 'POST', '/api/wallet-transactions', [{ requestId, fromWalletId: wallets[s.from]![s.currency], toUserId: people[s.to]!.userId, amount: formatAmount(s.units, s.currency) }]);
      return res.statusCode;
    }
    if (s.kind === 'withdraw') {
      const res = await api(people[s.who]!, 'POST', '/api/wallet-withdrawals', { requestId, walletId: wallets[s.who]![s.currency], toAddress: '0x2222222222222222222222222222222222222222', amount: formatAmount(s.units, s.currency) });
      return res.statusCode;
    }
    const to: Currency = s.from === 'ETH' ? 'USDT' : 'ETH';
    const quote = await api(people[s.who]!, 'POST', '/api/wallet-swaps/quote', { fromWalletId: wallets[s.who]![s.from], toWalletId: wallets[s.who]![to], amount: formatAmount(s.units, s.from) });
    if (quote.statusCode !== 200) return quote.statusCode;
    return (await api(people[s.who]!, 'POST', '/api/wallet-swaps', { quoteId: quote.json().id })).statusCode;
  }

  it('keeps the books balanced', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 6 }), async (steps) => {
        const statuses = await Promise.all(steps.map(run));
        // Refusals are 4xx with a code; nothing answers 5xx.
        assert.ok(statuses.every((status) => status < 500), JSON.stringify(statuses));
        const report = await t.ctx.services.walletsReconciler.run();
        assert.ok(report.ok, JSON.stringify(report));
      }),
      { numRuns: 12 },
    );
    // The runs moved money of every kind (not only refusals).
    assert.ok(succeeded.transfer > 0 && succeeded.withdraw > 0 && succeeded.swap > 0, JSON.stringify(succeeded));
    // And once the worker has settled every withdrawal on chain, still.
    const deadline = Date.now() + 30_000;
    while ((await t.db.collection('wallet_withdrawals').countDocuments({ status: { $in: ['pending', 'sent'] } })) > 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    assert.equal(await t.db.collection('wallet_withdrawals').countDocuments({ status: { $in: ['pending', 'sent'] } }), 0);
    const settled = await t.ctx.services.walletsReconciler.run();
    assert.ok(settled.ok, JSON.stringify(settled));
  });
});
