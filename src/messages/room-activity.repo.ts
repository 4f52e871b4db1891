import type { Collection, Db } from 'mongodb';
import { findByIds } from '../platform/mongo.js';
import { bulkOf, GroupWriter } from '../platform/group-writer.js';

/** What the chat list shows of a room's newest timeline message. */
export interface LastMessage {
  id: string;
  userId: string;
  /** The text as posted (ciphertext in end-to-end encrypted rooms). */
  message: string;
  encrypted: boolean;
  attachmentCount: number;
  createdAt: Date;
}

/**
 * A room's timeline counter and newest message; `_id` is the room id. `count` numbers the timeline
 * messages (comments are not counted), so a member's unread count is `count` less their read mark:
 * one `_id` lookup per room, whatever the room's size.
 */
interface RoomActivityDoc {
  _id: string;
  count: number;
  /** Timeline numbers of messages deleted for everyone: no one's unread count counts them. */
  deletedSeqs?: number[];
  last: LastMessage | null;
  lastAt: Date | null;
  /**
   * Who wrote the newest RECENT_AUTHORS timeline messages, oldest first: the last wrote number
   * `count`, the one before `count - 1`, and so on (pushed by the update that takes the numbers).
   */
  recentAuthors?: string[];
  /** The newest ADDRESSED_KEPT timeline messages that mention someone, the room, or reply to someone (see `unreadMentions`). */
  addressed?: AddressedEntry[];
}

/** A timeline message that addresses members: by whom, whom (mentions and the replied-to author), or the whole room. */
export interface AddressedEntry {
  seq: number;
  by: string;
  to: string[];
  room?: true;
}

/** How many addressing messages a room's record keeps: a member's unread mentions count up to this many. */
export const ADDRESSED_KEPT = 50;

/** How many of a room's newest messages' authors its activity record keeps (see `unreadCount`). */
export const RECENT_AUTHORS = 16;

/** How far one member has read a room's timeline; `_id` is `<roomId>:<userId>`. */
interface RoomReadDoc {
  _id: string;
  seq: number;
  /** Set with every mark since read receipts (older marks lack them). */
  roomId?: string;
  userId?: string;
  /** When the mark last moved forward (the newest time a mark was written). */
  at?: Date;
}

/** How long an author's read mark waits for others to be written with (see `markAuthorRead`). */
export const AUTHOR_MARK_LINGER_MS = 200;

export interface RoomActivity {
  roomId: string;
  count: number;
  /** The newest message (null in the light read: see `activityOf`). */
  last: LastMessage | null;
  /** Who wrote the newest message (in both reads). */
  lastUserId: string | null;
  /** Who wrote the newest timeline messages, oldest first (in both reads; see RoomActivityDoc). */
  recentAuthors: string[];
  /** Timeline numbers of messages deleted for everyone (in both reads). */
  deletedSeqs: number[];
  lastAt: Date | null;
  /** The newest messages that address members (in both reads). */
  addressed: AddressedEntry[];
}

/**
 * A member's unread count in a room: its timeline count less their read mark. An author has read the
 * timeline up to their own newest message: their mark is written a moment after their post's answer
 * (`markAuthorRead`), and the room's recent authors say it meanwhile, so the chat list never counts
 * one's own post, even when someone posted after it before the mark was written.
 */
export function unreadCount(activity: RoomActivity | undefined, mark: number | undefined, userId: string): number {
  if (!activity || activity.lastUserId === userId) return 0;
  const own = activity.recentAuthors.lastIndexOf(userId);
  const read = Math.max(mark ?? 0, own < 0 ? 0 : activity.count - (activity.recentAuthors.length - 1 - own));
  const deletedUnread = activity.deletedSeqs.filter((seq) => seq > read).length;
  return Math.max(0, activity.count - read - deletedUnread);
}

/**
 * A member's unread mentions in a room: messages after their read mark that mention them, mention the
 * room, or reply to them, not their own and not deleted (up to ADDRESSED_KEPT).
 */
export function unreadMentions(activity: RoomActivity | undefined, mark: number | undefined, userId: string): number {
  if (!activity) return 0;
  const read = mark ?? 0;
  return activity.addressed.filter((entry) => entry.seq > read && entry.by !== userId && (entry.room === true || entry.to.includes(userId)) && !activity.deletedSeqs.includes(entry.seq)).length;
}

/** A message's timeline number, and the room's newest message before it (see `append`). */
export interface Appended {
  seq: number;
  previous: Pick<RoomActivityDoc, 'last' | 'lastAt'>;
}

export class RoomActivityRepo {
  private readonly activity: Collection<RoomActivityDoc>;
  private readonly reads: Collection<RoomReadDoc>;

  constructor(db: Db) {
    this.activity = db.collection<RoomActivityDoc>('room_activity');
    this.reads = db.collection<RoomReadDoc>('room_reads');
  }

  /**
   * Takes the room's next timeline number and makes `last` its newest message, in one update (so the
   * newest message is always the one with the highest number); the number, and what was newest before
   * (for `unappend`, should the message not be stored). Messages appended to one room while another
   * group is being written take their numbers together, in one update (GroupWriter): the room's count
   * goes up by how many they are, each gets the next number in its turn, and the last is the newest.
   */
  append(roomId: string, last: LastMessage): Promise<Appended> {
    return this.appends.add({ roomId, last });
  }

  private readonly appends = new GroupWriter<{ roomId: string; last: LastMessage }, Appended>(async (group) => {
    const byRoom = new Map<string, { waiters: typeof group; newest: LastMessage }>();
    for (const waiter of group) {
      const room = byRoom.get(waiter.item.roomId);
      if (room) {
        room.waiters.push(waiter);
        room.newest = waiter.item.last;
      } else byRoom.set(waiter.item.roomId, { waiters: [waiter], newest: waiter.item.last });
    }
    await Promise.all(
      [...byRoom].map(async ([roomId, { waiters, newest }]) => {
        try {
          const before = await this.activity.findOneAndUpdate(
            { _id: roomId },
            {
              $inc: { count: waiters.length },
              $set: { last: newest, lastAt: newest.createdAt },
              $push: { recentAuthors: { $each: waiters.map((waiter) => waiter.item.last.userId), $slice: -RECENT_AUTHORS } },
            },
            { upsert: true, returnDocument: 'before', projection: { count: 1, last: 1, lastAt: 1 } },
          );
          let previous = { last: before?.last ?? null, lastAt: before?.lastAt ?? null };
          waiters.forEach((waiter, i) => {
            waiter.resolve({ seq: (before?.count ?? 0) + i + 1, previous });
            previous = { last: waiter.item.last, lastAt: waiter.item.last.createdAt };
          });
        } catch (error) {
          for (const waiter of waiters) waiter.reject(error);
        }
      }),
    );
  });

  /**
   * Puts back the newest message from before `append`, when the message it made newest was not stored
   * and nothing newer came since. Its number stays taken (a gap, as a race between two sends leaves).
   */
  async unappend(roomId: string, messageId: string, previous: Pick<RoomActivityDoc, 'last' | 'lastAt'>): Promise<void> {
    await this.activity.updateOne({ _id: roomId, 'last.id': messageId }, { $set: previous });
  }

  /**
   * A new member's start: the room's activity record exists from its first member on (its `lastAt`
   * is then the room's start, for the chat list's order), and the member's read mark is at its
   * current count, so their unread count counts from their joining.
   */
  async startMember(roomId: string, userId: string, at: Date): Promise<void> {
    const room = await this.activity.findOneAndUpdate(
      { _id: roomId },
      { $setOnInsert: { count: 0, last: null, lastAt: at } },
      { upsert: true, returnDocument: 'after', projection: { count: 1 } },
    );
    await this.markRead(roomId, userId, room?.count ?? 0);
  }

  async count(roomId: string): Promise<number> {
    return (await this.activity.findOne({ _id: roomId }, { projection: { count: 1 } }))?.count ?? 0;
  }

  /** Moves a member's read mark forward to `seq` (never back). Marks set while others are being written go together in one write (GroupWriter). */
  markRead(roomId: string, userId: string, seq: number, at = new Date()): Promise<void> {
    return this.marks.add({ _id: `${roomId}:${userId}`, seq, roomId, userId, at });
  }

  private readonly marks = new GroupWriter(bulkOf<RoomReadDoc>((marks) => this.writeMarks(marks)));

  /** Marks moved forward (never back), in one unordered write. */
  private writeMarks(marks: RoomReadDoc[]): Promise<unknown> {
    return this.reads.bulkWrite(
      marks.map(({ _id, seq, roomId, userId, at }) => ({ updateOne: { filter: { _id }, update: { $max: { seq, ...(at ? { at } : {}) }, $set: { roomId, userId } }, upsert: true } })),
      { ordered: false },
    );
  }

  /**
   * An author's mark after their post: marks wait up to AUTHOR_MARK_LINGER_MS for others and go
   * together in one write (a member's several marks as one, the furthest), so a stream of posts costs
   * a few writes a second, not one a post. Meanwhile `unreadCount` counts an author as having read up
   * to their own newest post (the room's recent authors); the author shows among the readers of the
   * messages before it once the mark is written.
   */
  markAuthorRead(roomId: string, userId: string, seq: number, at = new Date()): Promise<void> {
    return this.authorMarks.add({ _id: `${roomId}:${userId}`, seq, roomId, userId, at });
  }

  private readonly authorMarks = new GroupWriter<RoomReadDoc, void>(
    async (group) => {
      const furthest = new Map<string, RoomReadDoc>();
      for (const { item } of group) {
        const known = furthest.get(item._id);
        if (!known || item.seq > known.seq) furthest.set(item._id, item);
      }
      await this.writeMarks([...furthest.values()]);
      for (const waiter of group) waiter.resolve();
    },
    1024,
    AUTHOR_MARK_LINGER_MS,
  );

  /** Writes the authors' marks still waiting (a process stopping). */
  flush(): Promise<void> {
    return this.authorMarks.flush();
  }

  /** Who has read a room up to `seq` or further, and when their mark last moved (read receipts). */
  async readersFrom(roomId: string, seq: number): Promise<{ userId: string; at: Date | null }[]> {
    const marks = await this.reads.find({ roomId, seq: { $gte: seq } }).toArray();
    return marks.filter((mark) => mark.userId).map((mark) => ({ userId: mark.userId as string, at: mark.at ?? null }));
  }

  /** The activity of each room that has any, by room id; the light read (`full: false`) leaves the newest message's text out. */
  async activityOf(roomIds: string[], options: { full: boolean }): Promise<Map<string, RoomActivity>> {
    if (roomIds.length === 0) return new Map();
    const docs = await findByIds(this.activity, roomIds, options.full ? undefined : { count: 1, lastAt: 1, 'last.userId': 1, deletedSeqs: 1, recentAuthors: 1, addressed: 1 });
    return new Map(
      docs.map((doc) => [
        doc._id,
        { roomId: doc._id, count: doc.count, last: options.full ? (doc.last ?? null) : null, lastUserId: doc.last?.userId ?? null, lastAt: doc.lastAt ?? null, deletedSeqs: doc.deletedSeqs ?? [], recentAuthors: doc.recentAuthors ?? [], addressed: doc.addressed ?? [] },
      ]),
    );
  }

  /** Read marks by `<roomId>:<userId>` key, for many members at once (one read). */
  async readMarksOf(keys: string[]): Promise<Map<string, number>> {
    if (keys.length === 0) return new Map();
    const docs = await this.reads.find({ _id: { $in: keys } }).toArray();
    return new Map(docs.map((doc) => [doc._id, doc.seq]));
  }

  /** The read marks of one user in the given rooms, by room id (absent: nothing read). */
  async readMarks(userId: string, roomIds: string[]): Promise<Map<string, number>> {
    if (roomIds.length === 0) return new Map();
    const docs = await findByIds(this.reads, roomIds.map((roomId) => `${roomId}:${userId}`));
    return new Map(docs.map((doc) => [doc._id.slice(0, doc._id.lastIndexOf(':')), doc.seq]));
  }

  /** Notes a timeline message that addresses members (after the post's answer: see MessagesService.store). */
  async noteAddressed(roomId: string, entry: AddressedEntry): Promise<void> {
    await this.activity.updateOne({ _id: roomId }, { $push: { addressed: { $each: [entry], $slice: -ADDRESSED_KEPT } } });
  }

  /** A deleted account's read marks. */
  async forgetReader(userId: string): Promise<void> {
    await this.reads.deleteMany({ userId });
  }

  /** The chat lists' preview of a room whose newest message is a deleted account's erased one: emptied. */
  async eraseLastBy(userId: string): Promise<void> {
    await this.activity.updateMany({ 'last.userId': userId }, { $set: { 'last.message': '', 'last.attachmentCount': 0 } });
  }

  /** The chat list's preview of a room whose newest message was edited or deleted: its text as it is now. */
  async replaceLast(roomId: string, messageId: string, text: string): Promise<void> {
    await this.activity.updateOne({ _id: roomId, 'last.id': messageId }, { $set: { 'last.message': text } });
  }

  async ensureIndexes(): Promise<void> {
    await this.reads.createIndexes([{ key: { roomId: 1, seq: 1 }, name: 'readers' }]);
  }

  /** How many messages the room's timeline has, and its newest message's id. */
  async countAndNewest(roomId: string): Promise<{ count: number; newestId: string | null }> {
    const doc = await this.activity.findOne({ _id: roomId }, { projection: { count: 1, 'last.id': 1 } });
    return { count: doc?.count ?? 0, newestId: doc?.last?.id ?? null };
  }

  /** A timeline message deleted for everyone: unread counts leave it out from now on. */
  async noteDeleted(roomId: string, seq: number): Promise<void> {
    await this.activity.updateOne({ _id: roomId }, { $addToSet: { deletedSeqs: seq } });
  }
}
