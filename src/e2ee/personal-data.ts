import type { PersonalData } from '../platform/personal-data.js';

/** What this area keeps about people (docs/reference/personal-data.md is made from every area's list). */
export const personalData: readonly PersonalData[] = [
  { area: 'e2ee', collection: 'e2ee_identities', holds: 'devices\' public identity keys', erasure: 'revoked (`revoked: true`); the public keys stay', exported: '—', keepsId: 'revoked public keys stay so that what was signed with them still verifies and the device id is never registered again' },
  { area: 'e2ee', collection: 'e2ee_backups', holds: 'a user\'s key backup (ciphertext in blob storage)', erasure: 'removed', exported: '—' },
  { area: 'e2ee', collection: 'e2ee_key_versions', holds: 'room key versions with each device\'s encrypted share', erasure: 'the account\'s devices\' shares removed', exported: '—' },
  { area: 'e2ee', collection: 'e2ee_key_requests', holds: 'devices\' requests for room keys', erasure: 'expire with the request', exported: '—', keepsId: 'a pending request names the device until it expires' },
  { area: 'e2ee', collection: 'e2ee_rooms', holds: 'end-to-end encrypted rooms\' key state (no person)', erasure: 'kept with the room', exported: '—' },
  { area: 'e2ee', redisKeys: 'e2ee.keyCalls, e2ee.uploads', holds: 'per-device windows of key calls and uploads', erasure: 'expire within the hour', exported: '—' },
];
