import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RECENT_AUTHORS, unreadCount, type RoomActivity } from '../../src/messages/room-activity.repo.js';

/** A room's activity after messages by `authors` (oldest first), numbered 1…n. */
function activityAfter(authors: string[], deletedSeqs: number[] = []): RoomActivity {
  return { roomId: 'r', count: authors.length, last: null, lastUserId: authors.at(-1) ?? null, lastAt: null, deletedSeqs, recentAuthors: authors.slice(-RECENT_AUTHORS), addressed: [] };
}

describe('unread counts while an author\'s read mark is still to be written', () => {
  it('counts a member\'s messages after their mark, never their own', () => {
    assert.equal(unreadCount(activityAfter(['a', 'b', 'b']), 1, 'a'), 2);
    assert.equal(unreadCount(activityAfter(['a', 'b', 'b']), undefined, 'b'), 0, 'the newest message\'s author has read it all');
  });

  it('an author whose mark is not written yet has read up to their own newest post', () => {
    // a posted 2 and 3, then b posted 4 and 5 before a's mark (still 0) was written.
    assert.equal(unreadCount(activityAfter(['b', 'a', 'a', 'b', 'b']), undefined, 'a'), 2);
    assert.equal(unreadCount(activityAfter(['b', 'a', 'a', 'b', 'b']), 1, 'a'), 2);
    // A mark further on wins.
    assert.equal(unreadCount(activityAfter(['b', 'a', 'a', 'b', 'b']), 4, 'a'), 1);
    // Deleted messages after it are not counted.
    assert.equal(unreadCount(activityAfter(['b', 'a', 'a', 'b', 'b'], [5]), undefined, 'a'), 1);
  });

  it('beyond the recent authors, the mark alone counts', () => {
    const authors = ['a', ...Array.from({ length: RECENT_AUTHORS }, () => 'b')];
    assert.equal(unreadCount(activityAfter(authors), undefined, 'a'), RECENT_AUTHORS + 1);
    assert.equal(unreadCount(activityAfter(authors), 1, 'a'), RECENT_AUTHORS);
  });
});
