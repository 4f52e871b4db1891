import type { Collection, Db } from 'mongodb';

/** One user's membership of one chat room; `_id` is `<roomId>:<userId>`. */
export interface RoomMemberDoc {
  _id: string;
  roomId: string;
  userId: string;
  /** Members who left or were removed keep their row with `active` false. */
  active: boolean;
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
  readonly collection: Collection<RoomMemberDoc>;
  private readonly userRooms: Collection<UserRoomsDoc>;

  constructor(db: Db) {
    this.collection = db.collection<RoomMemberDoc>('room_members');
    this.userRooms = db.collection<UserRoomsDoc>('user_rooms');
  }

  async ensureIndexes(): Promise<void> {
    await this.collection.createIndexes([
      { key: { userId: 1, active: 1 }, name: 'rooms_of_user' },
      { key: { roomId: 1, active: 1 }, name: 'members_of_room' },
    ]);
  }

  /** Adds (or re-activates) a member. The row is the truth; the user's room list follows it. */
  async add(roomId: string, userId: string, now: Date): Promise<void> {
    await this.collection.updateOne(
      { _id: `${roomId}:${userId}` },
      { $set: { roomId, userId, active: true }, $setOnInsert: { joinedAt: now } },
      { upsert: true },
    );
    await this.userRooms.updateOne({ _id: userId }, { $addToSet: { roomIds: roomId } }, { upsert: true });
  }

  async deactivate(roomId: string, userId: string): Promise<void> {
    await this.collection.updateOne({ _id: `${roomId}:${userId}` }, { $set: { active: false } });
    await this.userRooms.updateOne({ _id: userId }, { $pull: { roomIds: roomId } });
  }

  async activeRoomIds(userId: string): Promise<string[]> {
    return (await this.userRooms.findOne({ _id: userId }))?.roomIds ?? [];
  }

  /** Of `others`, those sharing at least one active room with `userId`. */
  async sharingARoom(userId: string, others: string[]): Promise<Set<string>> {
    const rooms = new Set(await this.activeRoomIds(userId));
    if (rooms.size === 0 || others.length === 0) return new Set();
    const lists = await this.userRooms.find({ _id: { $in: others } }).toArray();
    return new Set(lists.filter((list) => list.roomIds.some((roomId) => rooms.has(roomId))).map((list) => list._id));
  }
}
