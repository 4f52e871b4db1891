import type { PersonalData } from '../platform/personal-data.js';

/** What this area keeps about people (docs/reference/personal-data.md is made from every area's list). */
export const personalData: readonly PersonalData[] = [
  { area: 'accounts', collection: 'account_deletions', holds: 'that an account was deleted, when, and with or without its words', erasure: 'kept: the record of the deletion (its steps), for the sweep and for audits', exported: '—', keepsId: 'the record that the account was deleted and erased (the id names a tombstone)' },
  { area: 'accounts', collection: 'account_exports', holds: 'the user\'s data exports: state, size, where the archive is', erasure: 'removed, archives included (the \'profile\' step)', exported: '—' },
  { area: 'accounts', redisKeys: 'accounts.deletionCode, accounts.deletionWrong', holds: 'the hash of the texted deletion code, and wrong tries', erasure: 'used up by the deletion; the rest expires within the hour', exported: '—' },
];
