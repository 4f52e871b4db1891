import type { PersonalData } from '../platform/personal-data.js';

/** What this area keeps about people (docs/reference/personal-data.md is made from every area's list). */
export const personalData: readonly PersonalData[] = [
  { area: 'calls', collection: 'calls', holds: 'one-to-one calls: caller, callee, media, times, outcome', erasure: 'kept: the other party\'s call history', exported: '—', keepsId: 'the other party\'s call history names who called' },
  { area: 'calls', collection: 'device_calls', holds: 'which device is in which call (while it lasts)', erasure: 'removed when the call ends', exported: '—' },
  { area: 'calls', collection: 'room_calls', holds: 'room calls: who joined and left, when', erasure: 'kept: the room\'s call history', exported: '—', keepsId: 'the room\'s call history names its participants' },
  { area: 'calls', collection: 'room_call_locks', holds: 'one room call at a time (no person)', erasure: 'removed when the call ends', exported: '—' },
  { area: 'calls', redisKeys: 'sfu.*', holds: 'the SFU nodes and the calls they hold (no person)', erasure: 'end with the calls', exported: '—' },
];
