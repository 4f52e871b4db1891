import type { PersonalData } from '../platform/personal-data.js';

/** What this area keeps about people (docs/reference/personal-data.md is made from every area's list). */
export const personalData: readonly PersonalData[] = [
  { area: 'attachments', collection: 'attachments', holds: 'files members sent: uploader, name, type, size, storage key', erasure: 'with eraseMessages: removed with their bytes; without: kept in the rooms they were sent to', exported: 'attachments.json and attachments/', keepsId: 'without eraseMessages, what they sent stays where they sent it, with its uploader\'s id' },
];
