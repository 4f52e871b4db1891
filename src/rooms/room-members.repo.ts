import type { Collection, Db } from 'mongodb';
import { findByIds } from '../platform/mongo.js';
import { sharedCache, type CacheBus, type SharedCache } from '../platform/cache/invalidation.js';

/** One user's membership of one chat room; `_id` is `<roomId>:<userId>`. */
export interface RoomMemberDoc {
  _id: string;
  roomId: string;
  userId: string;
  /** Members who left or were removed keep their row with `active` false. */
  active: boolean;
  /** A disabled member stays in the room but may not post or read its settings. */
  enabled: boolean;
  /** The level NONE, chosen (the spec's mute). */
  muted: boolean;
  /** The member's chosen level (absent: the room's default; `muted` wins); see notifications.ts. */
  level?: 'ALL' | 'MENTIONS';
  /** A mute with an end: NONE until then, then the chosen level again (absent or past: none). */
  mutedUntil?: Date | null;
  /** Per-member override of the room's participantPublishEnabled (the publish switch); null: the room's. */
  publishEnabled: boolean | null;
  /** Removed by the creator or an admin: may not join back by themself. */
  removedByAdmin: boolean;
  joinedAt: Date;
}

/**
 * The rooms a user is an active member of, keyed by user id. Kept beside the membership rows so that
 * "rooms of this user" (every socket handshake asks it) is one `_id` lookup: mongo-java-server uses
 * only unique indexes, and a scan of every membership per connection does not scale.
 */
interface UserRoomsDoc {
  _id: string;
  roomIds: string[];
}

export class RoomMembersRepo {
  private readonly collection: Collection<RoomMemberDoc>;
  private readonly userRooms: Collection<UserRoomsDoc>;

  /** Memberships by `<roomId>:<userId>`, for the hot path (posting); every write here clears them everywhere. */
  private readonly recent: SharedCache<RoomMemberDoc | null>;

  constructor(db: Db, bus?: CacheBus) {
    this.collection = db.collection<RoomMemberDoc>('room_members');
    this.userRooms = db.collection<UserRoomsDoc>('user_rooms');
    this.recent = sharedCache<RoomMemberDoc | null>(bus, 'member', 5_000);
  }

  /** A deleted account's list of rooms (empty once it left them all). */
  async forgetListOf(userId: string): Promise<void> {
    await this.userRooms.deleteOne({ _id: userId });
  }

  /** The membership from a 5-second cache that every membership write clears in every process. */
  findCached(roomId: string, userId: string): Promise<RoomMemberDoc | null> {
    return this.recent.get(`${roomId}:${userId}`, () => this.find(roomId, userId));
  }

  async ensureIndexes(): Promise<void> {
    await this.collection.createIndexes([
      { key: { userId: 1, active: 1 }, name: 'rooms_of_user' },
      { key: { roomId: 1, active: 1 }, name: 'members_of_room' },
    ]);
  }

  /**
   * Adds (or re-activates) a member; true when the user was not an active member before. The row is
   * the truth; the user's room list follows it.
   */
  async add(roomId: string, userId: string, now: Date, options: { muted?: boolean } = {}): Promise<boolean> {
    const before = await this.collection.findOneAndUpdate(
      { _id: `${roomId}:${userId}`, roomId, userId },
      {
        // Enabled and muted belong to the membership: leaving and joining again, or being added
        // again, keeps what an admin (or the member) set; only a first join sets them.
        $set: { roomId, userId, active: true, removedByAdmin: false },
        $setOnInsert: { joinedAt: now, publishEnabled: null, enabled: true, muted: options.muted ?? false },
      },
      { upsert: true, returnDocument: 'before' },
    );
    await this.userRooms.updateOne({ _id: userId }, { $addToSet: { roomIds: roomId } }, { upsert: true });
    await this.recent.clear(`${roomId}:${userId}`);
    return !before?.active;
  }

  /** Ends a membership; true when it was active. `byAdmin` remembers a removal by the creator or an admin. */
  async deactivate(roomId: string, userId: string, byAdmin = false): Promise<boolean> {
    const result = await this.collection.updateOne({ _id: `${roomId}:${userId}`, roomId, userId, active: true }, { $set: { active: false, removedByAdmin: byAdmin } });
    await this.userRooms.updateOne({ _id: userId }, { $pull: { roomIds: roomId } });
    await this.recent.clear(`${roomId}:${userId}`);
    return result.modifiedCount === 1;
  }

  /** One user's membership rows of the given rooms, by room id. */
  async membershipsOf(userId: string, roomIds: string[]): Promise<Map<string, RoomMemberDoc>> {
    if (roomIds.length === 0) return new Map();
    const rows = await findByIds(this.collection, roomIds.map((roomId) => `${roomId}:${userId}`));
    return new Map(rows.map((row) => [row.roomId, row]));
  }

  /**
   * By `_id` alone: mongo-java-server uses the `_id` index only for a filter on `_id` by itself, and this
   * read is the posting path's (behind the 5-second cache). On a sharded cluster it asks every shard;
   * the writes below name the shard key (room and user), which a sharded upsert or findAndModify needs.
   */
  find(roomId: string, userId: string): Promise<RoomMemberDoc | null> {
    return this.collection.findOne({ _id: `${roomId}:${userId}` });
  }

  async set(roomId: string, userId: string, set: Partial<Pick<RoomMemberDoc, 'enabled' | 'muted' | 'publishEnabled' | 'level' | 'mutedUntil'>>): Promise<RoomMemberDoc | null> {
    const updated = await this.collection.findOneAndUpdate({ _id: `${roomId}:${userId}`, roomId, userId, active: true }, { $set: set }, { returnDocument: 'after' });
    await this.recent.clear(`${roomId}:${userId}`);
    return updated;
  }

  /** Active members, enabled or not (end-to-end encrypted rooms: who may hold the room's key). */
  async activeMemberIds(roomId: string): Promise<string[]> {
    const rows = await this.collection.find({ roomId, active: true }, { projection: { userId: 1 } }).toArray();
    return rows.map((row) => row.userId);
  }

  /** Members who may take part (active and enabled), e.g. to ring for a room call. */
  async enabledMemberIds(roomId: string): Promise<string[]> {
    const rows = await this.collection.find({ roomId, active: true, enabled: true }, { projection: { userId: 1 } }).toArray();
    return rows.map((row) => row.userId);
  }

  /**
   * Members a new message of the room may be pushed to: active, enabled and not muted for good, with
   * their level and any mute with an end (the push job decides per message: notifications.ts).
   */
  async pushRecipients(roomId: string): Promise<Pick<RoomMemberDoc, 'userId' | 'muted' | 'level' | 'mutedUntil'>[]> {
    return this.collection.find({ roomId, active: true, enabled: true, muted: false }, { projection: { _id: 0, userId: 1, muted: 1, level: 1, mutedUntil: 1 } }).toArray();
  }

  /** Memberships by `<roomId>:<userId>`, many users' at once (one read). */
  async membershipsByIds(keys: string[]): Promise<Map<string, RoomMemberDoc>> {
    if (keys.length === 0) return new Map();
    return new Map((await findByIds(this.collection, keys)).map((row) => [row._id, row]));
  }

  /** Which of `userIds` are active members of the room (one read). */
  async activeAmong(roomId: string, userIds: string[]): Promise<string[]> {
    if (userIds.length === 0) return [];
    const rows = await this.collection.find({ _id: { $in: userIds.map((userId) => `${roomId}:${userId}`) }, active: true }, { projection: { userId: 1 } }).toArray();
    return rows.map((row) => row.userId);
  }

  /** The active rooms of each of `userIds` (one read). */
  async roomIdsOfUsers(userIds: string[]): Promise<Map<string, string[]>> {
    if (userIds.length === 0) return new Map();
    const lists = await this.userRooms.find({ _id: { $in: userIds } }).toArray();
    return new Map(lists.map((list) => [list._id, list.roomIds]));
  }

  async activeRoomIds(userId: string): Promise<string[]> {
    return (await this.userRooms.findOne({ _id: userId }))?.roomIds ?? [];
  }

  /** Of `others`, those sharing at least one active room with `userId`. */
  async sharingARoom(userId: string, others: string[]): Promise<Set<string>> {
    const rooms = new Set(await this.activeRoomIds(userId));
    if (rooms.size === 0 || others.length === 0) return new Set();
    const roomsOf = await this.roomIdsOfUsers(others);
    return new Set([...roomsOf].filter(([, roomIds]) => roomIds.some((roomId) => rooms.has(roomId))).map(([userId]) => userId));
  }

  /** A room's active members, longest-standing first. */
  activeMembersOf(roomId: string): Promise<RoomMemberDoc[]> {
    return this.collection.find({ roomId, active: true }).sort({ joinedAt: 1, _id: 1 }).toArray();
  }

  /** Every membership of a user, past ones included. */
  allOf(userId: string): Promise<RoomMemberDoc[]> {
    return this.collection.find({ userId }).sort({ joinedAt: 1 }).toArray();
  }
}
