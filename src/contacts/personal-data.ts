import type { PersonalData } from '../platform/personal-data.js';

/** What this area keeps about people (docs/reference/personal-data.md is made from every area's list). */
export const personalData: readonly PersonalData[] = [
  { area: 'contacts', collection: 'connections', holds: 'who is connected to whom', erasure: 'removed', exported: 'contacts.json: connections (other people by id)' },
  { area: 'contacts', collection: 'connection_requests', holds: 'requests between people, with their message', erasure: 'removed, sent and received', exported: 'contacts.json: requests' },
  { area: 'contacts', collection: 'blocks', holds: 'who blocked whom, and why', erasure: 'the account\'s own blocks removed; blocks of it by others stay (theirs)', exported: 'contacts.json: blocks', keepsId: 'others\' blocks of the deleted account are theirs to keep' },
  { area: 'contacts', redisKeys: 'contacts.invitesBy', holds: 'invitations by number or e-mail made this hour and day', erasure: 'expire within a day', exported: '—' },
];
