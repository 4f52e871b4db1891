import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { Services } from '../src/composition.js';
import { dependencyGauge } from '../src/platform/dependencies.js';


/**
 * What `/metrics` shows: the process's own figures, REST request durations, and the wallet books as
 * the reconciler last found them (read from the database at each scrape, so every api node shows the
 * same figures; docs/clients/wallets.md, says what to alert on).
 */
export function createMetrics(services: Pick<Services, 'walletsReconciler' | 'ops'>, registry: Registry) {
  const durations = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'REST request durations by route and status',
    labelNames: ['method', 'route', 'status'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  });

  dependencyGauge(registry, services.ops.dependencies, ['mongodb', 'redis']);

  new Gauge({
    name: 'sms_budget_refusals',
    help: 'Texts this process refused since it started because an hourly budget was spent, by scope (country, prefix, global): a sign of SMS pumping',
    labelNames: ['scope'],
    registers: [registry],
    collect() {
      for (const [scope, count] of Object.entries(services.ops.smsRefusals())) this.set({ scope }, count);
    },
  });

  for (const [name, help, key] of [
    ['ledger_groups_written', 'Groups of ledger entries this process wrote (group commit: one database command per step for a whole group)', 'groups'],
    ['ledger_group_entries', 'Ledger entries those groups held (divided by ledger_groups_written: entries per group)', 'entries'],
  ] as const) {
    new Counter({
      name: `${name}_total`,
      help,
      registers: [registry],
      collect() {
        // The ledger counts; the scrape shows its count.
        this.reset();
        this.inc(services.ops.ledgerWritten()[key]);
      },
    });
  }

  // One read per scrape, shared by the gauges below (a scrape starts every collect at once); when the
  // database does not answer, the gauges are left out.
  let latest: ReturnType<Services['walletsReconciler']['latest']> | null = null;
  const books = () =>
    (latest ??= services.walletsReconciler
      .latest()
      .catch(() => null)
      .finally(() => (latest = null)));
  new Gauge({
    name: 'wallet_books_ok',
    help: '1 when the last books check passed, 0 when it found a problem (absent before the first check)',
    registers: [registry],
    async collect() {
      const check = await books();
      if (check) this.set(check.ok ? 1 : 0);
    },
  });
  new Gauge({
    name: 'wallet_books_problems',
    help: 'What the last books check found, by kind: currencies whose accounts do not sum to zero, accounts off their lines, negative wallets, currencies the chain does not cover',
    labelNames: ['kind'],
    registers: [registry],
    async collect() {
      const check = await books();
      if (!check) return;
      this.set({ kind: 'unbalanced_currency' }, check.unbalancedCurrencies);
      this.set({ kind: 'mismatched_account' }, check.mismatchedAccounts);
      this.set({ kind: 'negative_wallet' }, check.negativeWallets);
      if (check.uncoveredCurrencies !== null) this.set({ kind: 'uncovered_currency' }, check.uncoveredCurrencies);
    },
  });
  new Gauge({
    name: 'wallet_books_checked_timestamp_seconds',
    help: 'When the last books check ran (alert when it is older than a few reconciler periods)',
    registers: [registry],
    async collect() {
      const check = await books();
      if (check) this.set(check.at.getTime() / 1000);
    },
  });
  new Gauge({
    name: 'wallet_books_entries_finished',
    help: 'Ledger entries a crash had left between steps that the last reconciler run finished',
    registers: [registry],
    async collect() {
      const check = await books();
      if (check) this.set(check.finished);
    },
  });
  return { registry, durations };
}
