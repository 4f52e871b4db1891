import type { PersonalData } from '../platform/personal-data.js';

/** What this area keeps about people (docs/reference/personal-data.md is made from every area's list). */
export const personalData: readonly PersonalData[] = [
  { area: 'wallets', collection: 'ledger_accounts', holds: 'wallets: owner, currency, balance, deposit address', erasure: 'closed (they must hold no money), kept: the books', exported: 'wallets.json', keepsId: 'the books must balance: closed wallets stay, by owner id' },
  { area: 'wallets', collection: 'ledger_journal', holds: 'every money movement between accounts', erasure: 'kept: the books', exported: 'wallets.json: the history', keepsId: 'the books' },
  { area: 'wallets', collection: 'ledger_counters', holds: 'deposit address counters (no person)', erasure: 'kept', exported: '—' },
  { area: 'wallets', collection: 'ledger_books_checks', holds: 'the reconciler\'s checks (no person)', erasure: 'kept', exported: '—' },
  { area: 'wallets', collection: 'wallet_withdrawals', holds: 'withdrawals: wallet, address, amount, transaction', erasure: 'kept: the books', exported: 'wallets.json', keepsId: 'the books' },
  { area: 'wallets', collection: 'wallet_swaps', holds: 'conversions between currencies', erasure: 'kept: the books', exported: 'wallets.json', keepsId: 'the books' },
  { area: 'wallets', collection: 'wallet_swap_quotes', holds: 'conversion quotes, for minutes', erasure: 'expire', exported: '—', keepsId: 'a quote names its wallet until it expires' },
  { area: 'wallets', collection: 'wallet_payment_requests', holds: 'payment requests: recipients and amounts', erasure: 'open ones cancelled when the wallets close; kept: the books', exported: 'wallets.json', keepsId: 'the books' },
  { area: 'wallets', collection: 'wallet_limit_requests', holds: 'requests for higher sending limits', erasure: 'kept with the wallets', exported: '—', keepsId: 'the books' },
  { area: 'wallets', collection: 'chain_cursors', holds: 'how far the deposit watcher has read the chain (no person)', erasure: 'kept', exported: '—' },
  { area: 'wallets', redisKeys: 'wallets.hotWalletLock', holds: 'a lock (no person)', erasure: 'expires', exported: '—' },
];
