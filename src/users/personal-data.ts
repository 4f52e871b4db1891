import type { PersonalData } from '../platform/personal-data.js';

/** What this area keeps about people (docs/reference/personal-data.md is made from every area's list). */
export const personalData: readonly PersonalData[] = [
  { area: 'users', collection: 'users', holds: 'the profile: number, name, e-mail, picture, language, settings (do-not-disturb and quiet hours with their time zone included), two-factor secret', erasure: 'the number freed at once; name, e-mail, picture, settings and secret erased; a tombstone stays', exported: 'profile.json', keepsId: 'the account\'s tombstone: messages, rooms and the ledger point at it, and it answers as deleted' },
  { area: 'users', redisKeys: 'users.twoFactorWrong', holds: 'wrong authenticator codes per account', erasure: 'expire within the hour', exported: '—' },
];
