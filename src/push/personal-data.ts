import type { PersonalData } from '../platform/personal-data.js';

/** What this area keeps about people (docs/reference/personal-data.md is made from every area's list). */
export const personalData: readonly PersonalData[] = [
  { area: 'push', collection: 'push_records', holds: 'the local push provider\'s record of what it was handed (development and tests: FCM and APNs keep their own)', erasure: 'kept: it stands for the provider\'s own logs', exported: '—', keepsId: 'the local provider stands for FCM and APNs, whose logs are theirs: what it was handed stays as handed' },
  { area: 'push', redisKeys: 'pushDelivered, push.reach, push.reachVersion', holds: 'which devices a message\'s push reached; which devices a room\'s posts could reach', erasure: 'expire within a day (delivered logs) or change with the room', exported: '—' },
];
