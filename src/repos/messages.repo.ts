import type { Collection, Db } from 'mongodb';

export interface GeoLocation {
  latitude: number;
  longitude: number;
  country?: string | null;
  city?: string | null;
}

export interface MessageDoc {
  /** A MongoDB ObjectId in hex: ordered by time, so it is also the paging cursor. */
  _id: string;
  roomId: string;
  userId: string;
  message: string;
  encrypted: boolean;
  geoLocation: GeoLocation | null;
  attachmentIds: string[];
  createdAt: Date;
}

export class MessagesRepo {
  readonly collection: Collection<MessageDoc>;

  constructor(db: Db) {
    this.collection = db.collection<MessageDoc>('messages');
  }

  async ensureIndexes(): Promise<void> {
    await this.collection.createIndexes([{ key: { roomId: 1, _id: -1 }, name: 'room_timeline' }]);
  }

  async insert(message: MessageDoc): Promise<void> {
    await this.collection.insertOne(message);
  }

  findById(id: string): Promise<MessageDoc | null> {
    return this.collection.findOne({ _id: id });
  }

  /** Up to `limit` messages before (older than) a cursor, newest first. */
  before(roomId: string, cursor: string | null, limit: number): Promise<MessageDoc[]> {
    const filter = cursor ? { roomId, _id: { $lt: cursor } } : { roomId };
    return this.collection.find(filter).sort({ _id: -1 }).limit(limit).toArray();
  }

  /** The `limit` messages right after (newer than) a cursor, oldest first. */
  after(roomId: string, cursor: string, limit: number): Promise<MessageDoc[]> {
    return this.collection.find({ roomId, _id: { $gt: cursor } }).sort({ _id: 1 }).limit(limit).toArray();
  }
}
