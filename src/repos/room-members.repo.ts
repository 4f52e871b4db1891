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

export class RoomMembersRepo {
  readonly collection: Collection<RoomMemberDoc>;

  constructor(db: Db) {
    this.collection = db.collection<RoomMemberDoc>('room_members');
  }

  async ensureIndexes(): Promise<void> {
    await this.collection.createIndexes([
      { key: { userId: 1, active: 1 }, name: 'rooms_of_user' },
      { key: { roomId: 1, active: 1 }, name: 'members_of_room' },
    ]);
  }

  async add(roomId: string, userId: string, now: Date): Promise<void> {
    await this.collection.updateOne(
      { _id: `${roomId}:${userId}` },
      { $set: { roomId, userId, active: true }, $setOnInsert: { joinedAt: now } },
      { upsert: true },
    );
  }

  async activeRoomIds(userId: string): Promise<string[]> {
    const rows = await this.collection.find({ userId, active: true }, { projection: { roomId: 1 } }).toArray();
    return rows.map((row) => row.roomId);
  }

  /** Of `others`, those sharing at least one active room with `userId`. */
  async sharingARoom(userId: string, others: string[]): Promise<Set<string>> {
    const rooms = await this.activeRoomIds(userId);
    if (rooms.length === 0 || others.length === 0) return new Set();
    const rows = await this.collection
      .find({ roomId: { $in: rooms }, userId: { $in: others }, active: true }, { projection: { userId: 1 } })
      .toArray();
    return new Set(rows.map((row) => row.userId));
  }
}
