import type { PersonalData } from '../platform/personal-data.js';

/** What this area keeps about people (docs/reference/personal-data.md is made from every area's list). */
export const personalData: readonly PersonalData[] = [
  { area: 'auth', collection: 'login_codes', holds: 'sign-in codes (hashed) sent to a number', erasure: 'the number\'s codes removed when the account is deleted; every code goes 5 minutes after it expires', exported: '—' },
  { area: 'auth', redisKeys: 'auth.codeRequests, fromAddress, twoFactorTries, twoFactorUsed, webSession, webShown', holds: 'sign-in limits by number and address, console sessions', erasure: 'expire by themselves (an hour at most); console sessions end with the account\'s tokens', exported: '—' },
];
