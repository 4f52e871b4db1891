import type { PersonalData } from '../platform/personal-data.js';

/** What this area keeps about people (docs/reference/personal-data.md is made from every area's list). */
export const personalData: readonly PersonalData[] = [
  { area: 'devices', collection: 'devices', holds: 'devices signed in: name, platform, push tokens, refresh token hash, biometric key', erasure: 'revoked at once; push tokens dropped, names blanked; the nameless records stay', exported: 'devices.json (never a token)', keepsId: 'revoked devices stay, nameless, so a token presented later is known as revoked' },
  { area: 'devices', collection: 'user_devices', holds: 'the list of a user\'s device ids', erasure: 'removed (the last step)', exported: '—' },
  { area: 'devices', redisKeys: 'presence.*, inboxMeta, inboxEvents, biometric.*', holds: 'a device\'s presence, its inbox of events, biometric nonces and codes', erasure: 'the sockets close at once; presence and inboxes expire (INBOX_MAX_AGE); codes within minutes', exported: '—' },
];
