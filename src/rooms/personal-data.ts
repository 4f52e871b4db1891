import type { PersonalData } from '../platform/personal-data.js';

/** What this area keeps about people (docs/reference/personal-data.md is made from every area's list). */
export const personalData: readonly PersonalData[] = [
  { area: 'rooms', collection: 'rooms', holds: 'rooms: name, description, creator, admins', erasure: 'the account\'s rooms pass to their longest-standing member (or close)', exported: 'rooms.json', keepsId: 'a room keeps who made it only when nobody else is left' },
  { area: 'rooms', collection: 'room_members', holds: 'memberships: who, since when, settings', erasure: 'every membership ended (left); the rows stay', exported: 'rooms.json', keepsId: 'a former member\'s row: the room\'s record of who was in it' },
  { area: 'rooms', collection: 'user_rooms', holds: 'the list of a user\'s rooms', erasure: 'removed', exported: '—' },
  { area: 'rooms', collection: 'room_invitations', holds: 'invitations into rooms: inviter, invitee', erasure: 'pending ones cancelled; the records stay', exported: '—', keepsId: 'an invitation names both sides, for the other\'s history' },
  { area: 'rooms', collection: 'room_links', holds: 'readable room links (no person)', erasure: 'kept', exported: '—' },
  { area: 'rooms', redisKeys: 'rooms.invitesBy', holds: 'invitations a member sent this hour', erasure: 'expire within the hour', exported: '—' },
];
