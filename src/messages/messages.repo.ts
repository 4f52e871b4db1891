import type { Collection, Db, UpdateFilter } from 'mongodb';
import type { Card } from '../platform/cards.schemas.js';

import type { GeoLocation } from '../platform/geoip.js';
import { bulkOf, GroupWriter } from '../platform/group-writer.js';

export type { GeoLocation };

export interface MessageDoc {
  /** A MongoDB ObjectId in hex: ordered by time, so it is also the paging cursor. */
  _id: string;
  roomId: string;
  userId: string;
  message: string;
  encrypted: boolean;
  geoLocation: GeoLocation | null;
  attachmentIds: string[];
  /** The message this one comments on; null for the room's own timeline. */
  parentId: string | null;
  /** Language the post was written in (the author's language when posted). */
  language: string;
  /** Other language versions of a broadcast post, by language code. */
  translations: Record<string, string>;
  /** Number in the room's timeline (1, 2, …); absent on comments and on messages from before it was kept. */
  seq?: number;
  /** `<roomId>:<userId>:<clientMessageId>` when the phone sent one: a resend finds the message it already made. */
  clientKey?: string;
  /** A card posted by an app (its author is `app:<appId>`, the text empty). */
  appId?: string;
  card?: Card;
  /** Set when its author deleted their account and asked for what they wrote to be erased. */
  erasedAt?: Date | null;
  createdAt: Date;
}

export class MessagesRepo {
  private readonly collection: Collection<MessageDoc>;

  constructor(db: Db) {
    this.collection = db.collection<MessageDoc>('messages');
  }

  async ensureIndexes(): Promise<void> {
    await this.collection.createIndexes([
      { key: { roomId: 1, _id: -1 }, name: 'room_timeline' },
      { key: { clientKey: 1 }, name: 'client_message_once', unique: true, sparse: true },
    ]);
  }

  /**
   * Stores a message; throws the driver's duplicate-key error for a `clientKey` stored before. Messages
   * stored while others are being written go together in one insert (GroupWriter), each with its own outcome.
   */
  insert(message: MessageDoc): Promise<void> {
    return this.inserts.add(message);
  }

  private readonly inserts = new GroupWriter(bulkOf<MessageDoc>((messages) => this.collection.insertMany(messages, { ordered: false })));

  findByClientKey(clientKey: string): Promise<MessageDoc | null> {
    return this.collection.findOne({ clientKey });
  }

  findById(id: string): Promise<MessageDoc | null> {
    return this.collection.findOne({ _id: id });
  }

  /** Up to `limit` messages of a timeline (the room's, or one message's comments) before a cursor, newest first. */
  before(roomId: string, parentId: string | null, cursor: string | null, limit: number): Promise<MessageDoc[]> {
    const filter = cursor ? { roomId, parentId, _id: { $lt: cursor } } : { roomId, parentId };
    return this.collection.find(filter).sort({ _id: -1 }).limit(limit).toArray();
  }

  /** The `limit` messages of a timeline right after (newer than) a cursor, oldest first. */
  after(roomId: string, parentId: string | null, cursor: string, limit: number): Promise<MessageDoc[]> {
    return this.collection.find({ roomId, parentId, _id: { $gt: cursor } }).sort({ _id: 1 }).limit(limit).toArray();
  }

  /** Sets (text) or removes (null) one language version; the message as it is afterwards. */
  setTranslation(id: string, language: string, text: string | null): Promise<MessageDoc | null> {
    const field: `translations.${string}` = `translations.${language}`;
    const update: UpdateFilter<MessageDoc> = text === null ? { $unset: { [field]: true } } : { $set: { [field]: text } };
    return this.collection.findOneAndUpdate({ _id: id }, update, { returnDocument: 'after' });
  }

  /**
   * What a deleted account wrote, erased where it stands (asked for at deletion): the text, its
   * translations, place and attachments gone; the message stays in its room's timeline, emptied.
   */
  async eraseByAuthor(userId: string, at: Date): Promise<string[]> {
    const erased = await this.collection.find({ userId, erasedAt: null }, { projection: { _id: 1 } }).toArray();
    if (erased.length > 0) {
      await this.collection.updateMany({ userId, erasedAt: null }, { $set: { message: '', translations: {}, geoLocation: null, attachmentIds: [], erasedAt: at }, $unset: { card: '' } });
    }
    return erased.map((message) => message._id);
  }

  /** One message emptied where it stands (a site administrator removed it); false when there is no such message. */
  async eraseOne(messageId: string, at: Date): Promise<boolean> {
    const erased = await this.collection.updateOne({ _id: messageId }, { $set: { message: '', translations: {}, geoLocation: null, attachmentIds: [], erasedAt: at }, $unset: { card: '' } });
    return erased.matchedCount === 1;
  }

  /** What a user wrote, oldest first (their data export). */
  byAuthor(userId: string): Promise<MessageDoc[]> {
    return this.collection.find({ userId }).sort({ _id: 1 }).toArray();
  }
}
