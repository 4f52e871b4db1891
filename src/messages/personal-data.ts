import type { PersonalData } from '../platform/personal-data.js';

/** What this area keeps about people (docs/reference/personal-data.md is made from every area's list). */
export const personalData: readonly PersonalData[] = [
  { area: 'messages', collection: 'messages', holds: 'what members wrote: text, attachments, location, reactions, reply excerpts, the members they mentioned (ids)', erasure: 'with eraseMessages: text, location and attachments emptied where they stand (replies quoting it lose the excerpt); without: kept, shown as by a deleted account', exported: 'messages.json: what they wrote', keepsId: 'a message stays in its room as a tombstone (emptied with eraseMessages), by its author\'s id, so threads and replies keep their place' },
  { area: 'messages', collection: 'message_edits', holds: 'earlier versions of edited messages', erasure: 'with eraseMessages: removed', exported: '—' },
  { area: 'messages', collection: 'message_removals', holds: 'deletions for everyone under way (ids only)', erasure: 'removed once each finishes', exported: '—', keepsId: 'a deletion under way names the message, not the person' },
  { area: 'messages', collection: 'room_activity', holds: 'each room\'s counter, newest message and its 16 newest messages\' authors', erasure: 'with eraseMessages: the preview emptied; authors stay as ids', exported: '—', keepsId: 'who wrote a room\'s newest messages, by id, as the messages keep it' },
  { area: 'messages', collection: 'room_reads', holds: 'how far each member has read each room', erasure: 'removed', exported: '—' },
];
