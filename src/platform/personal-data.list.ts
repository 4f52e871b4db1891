import type { PersonalData } from './personal-data.js';

/** What this area keeps about people (docs/reference/personal-data.md is made from every area's list). */
export const personalData: readonly PersonalData[] = [
  { area: 'platform', collection: 'admin_audit', holds: 'site administrators\' actions: who, on what, why', erasure: 'kept, never changed (the audit log)', exported: '—', keepsId: 'the audit log names what administrators acted on' },
  { area: 'platform', redisKeys: 'idempotency, slots, smsBudget, cacheInvalidation, socketIo, hubPokes, queuePrefix', holds: 'answers kept for idempotency keys (a day), limit slots, SMS budgets, channels, queued jobs (ids, never secrets; the last 1,000 finished kept per queue)', erasure: 'expire by themselves; an account\'s erasure job is removed once done (`forgetWhenDone`), so no finished job names the erased account', exported: '—' },
];
