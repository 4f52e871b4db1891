import type { PersonalData } from '../platform/personal-data.js';

/** What this area keeps about people (docs/reference/personal-data.md is made from every area's list). */
export const personalData: readonly PersonalData[] = [
  { area: 'moderation', collection: 'reports', holds: 'reports members made: reporter, target, reason, comment', erasure: 'the account\'s comments emptied; its reports stay for the moderators; reports about it stay', exported: '—', keepsId: 'a report names its reporter and its target by id, for the moderators\' decision' },
  { area: 'moderation', redisKeys: 'moderation.reports', holds: 'reports a member made this hour', erasure: 'expire within the hour', exported: '—' },
];
