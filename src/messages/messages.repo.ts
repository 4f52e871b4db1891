import type { Collection, Db, UpdateFilter } from 'mongodb';
import type { Card } from '../platform/cards.schemas.js';

import type { GeoLocation } from '../platform/geoip.js';
import { bulkOf, GroupWriter } from '../platform/group-writer.js';

export type { GeoLocation };

/** The client key of a message the phone gave no id of its own: unique by the message's. */
export const ownClientKey = (roomId: string, messageId: string) => `${roomId}:id:${messageId}`;

export interface MessageDoc {
  /** An ObjectId-shaped id in hex (newMessageId): ordered by time, so it is also the paging cursor. */
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
  /**
   * `<roomId>:<userId>:<clientMessageId>` when the phone sent one (a resend finds the message it
   * already made), else `<roomId>:id:<_id>`. Always there: with the room it is the unique index, and the
   * shard key on a sharded cluster (src/platform/shard-keys.ts), which a unique index must start with.
   */
  clientKey: string;
  /** A card posted by an app (its author is `app:<appId>`, the text empty). */
  appId?: string;
  card?: Card;
  /** The reply's excerpt of the message it answers, kept true when that one is edited or deleted. */
  replyTo?: ReplyExcerpt | null;
  /** The members it mentions (absent: none), and whether it mentions the whole room (absent: no). */
  mentions?: string[];
  mentionsRoom?: true;
  /** When its author last edited it (earlier versions are in `message_edits`). */
  editedAt?: Date | null;
  /**
   * Deleted for everyone (by its author, the room's managers, a site administrator, or its author's
   * account deletion): a tombstone, its text, translations, card and attachments gone.
   */
  deletedAt?: Date | null;
  /** Members who hid it for themselves only (`DELETE …?scope=me`). */
  hiddenFor?: string[];
  /** Reactions by member: the emoji each put (at most 3 different ones). */
  reactions?: Record<string, string[]>;
  createdAt: Date;
}

/** What a reply shows of the message it answers (`kind` says what the excerpt is). */
export interface ReplyExcerpt {
  id: string;
  userId: string;
  /** Up to 100 characters of its text; null for the other kinds. */
  excerpt: string | null;
  kind: 'TEXT' | 'ENCRYPTED' | 'DELETED' | 'ATTACHMENTS' | 'CARD';
}

/** What stays of a message deleted for everyone: its id, room, author, time and place in the timeline. */
const TOMBSTONE = (at: Date): UpdateFilter<MessageDoc> => ({ $set: { message: '', translations: {}, geoLocation: null, attachmentIds: [], deletedAt: at }, $unset: { card: '', replyTo: '', reactions: '' } });

/** How many different reactions one member may put on one message. */
export const MAX_REACTIONS_PER_MEMBER = 3;

/** Earlier versions of edited messages (`message_edits`): each text as it was, and when it was replaced. */
export interface MessageEditDoc {
  _id: string;
  messageId: string;
  message: string;
  /** When the text was first the message's (its post, or the edit before). */
  since: Date;
  replacedAt: Date;
}

/**
 * Deletions for everyone under way (`message_removals`): written before the tombstone, removed once
 * every follow-up is done (files, earlier versions, reply excerpts, the chat list, the broadcast). A
 * process that died between the two leaves its row, and the minute clean-up finishes the deletion.
 */
export class MessageRemovalsRepo {
  private readonly collection: Collection<{ _id: string; at: Date }>;

  constructor(db: Db) {
    this.collection = db.collection<{ _id: string; at: Date }>('message_removals');
  }

  async ensureIndexes(): Promise<void> {
    await this.collection.createIndexes([{ key: { at: 1 }, name: 'by_time' }]);
  }

  async begin(messageId: string, at: Date): Promise<void> {
    await this.collection.updateOne({ _id: messageId }, { $setOnInsert: { at } }, { upsert: true });
  }

  async done(messageId: string): Promise<void> {
    await this.collection.deleteOne({ _id: messageId });
  }

  async pending(messageId: string): Promise<boolean> {
    return (await this.collection.countDocuments({ _id: messageId }, { limit: 1 })) > 0;
  }

  /** Deletions begun before `before` and not finished: a process died midway. */
  async stalled(before: Date, limit: number): Promise<string[]> {
    return (await this.collection.find({ at: { $lt: before } }).limit(limit).toArray()).map((row) => row._id);
  }
}

export class MessageEditsRepo {
  private readonly collection: Collection<MessageEditDoc>;

  constructor(db: Db) {
    this.collection = db.collection<MessageEditDoc>('message_edits');
  }

  async ensureIndexes(): Promise<void> {
    await this.collection.createIndexes([{ key: { messageId: 1, replacedAt: 1 }, name: 'versions' }]);
  }

  async insert(edit: MessageEditDoc): Promise<void> {
    await this.collection.insertOne(edit);
  }

  /** A message's earlier versions, oldest first. */
  of(messageId: string): Promise<MessageEditDoc[]> {
    return this.collection.find({ messageId }).sort({ replacedAt: 1 }).toArray();
  }

  /** The earlier versions of these messages, gone (an erased author's). */
  async removeOfMany(messageIds: string[]): Promise<void> {
    for (let i = 0; i < messageIds.length; i += 1000) await this.collection.deleteMany({ messageId: { $in: messageIds.slice(i, i + 1000) } });
  }

  /** A deleted message's earlier versions removed with it. */
  async removeOf(messageId: string): Promise<void> {
    await this.collection.deleteMany({ messageId });
  }
}

export class MessagesRepo {
  private readonly collection: Collection<MessageDoc>;

  constructor(db: Db) {
    this.collection = db.collection<MessageDoc>('messages');
  }

  /** How many messages (not comments) one author wrote in a room. */
  countByAuthor(roomId: string, userId: string): Promise<number> {
    return this.collection.countDocuments({ roomId, userId, parentId: null });
  }

  async ensureIndexes(): Promise<void> {
    // A database from before every message had a client key still has the index unique over the key
    // alone (sparse), which a sharded cluster cannot keep: its messages get their keys, then it goes.
    // Checked by the index, so a start never scans the messages once that is done.
    const indexes = await this.collection.listIndexes().toArray().catch(() => []);
    if (indexes.some((index) => index.name === 'client_message_once')) {
      await this.backfillClientKeys();
      await this.collection.dropIndex('client_message_once');
    }
    await this.collection.createIndexes([
      { key: { roomId: 1, _id: -1 }, name: 'room_timeline' },
      { key: { roomId: 1, clientKey: 1 }, name: 'client_message_once_in_room', unique: true },
    ]);
  }

  /** Messages stored before every message had a client key get their own (`<roomId>:id:<_id>`), a thousand at a time. */
  private async backfillClientKeys(): Promise<void> {
    for (;;) {
      const missing = await this.collection.find({ clientKey: { $exists: false } }, { projection: { _id: 1, roomId: 1 } }).limit(1000).toArray();
      if (missing.length === 0) return;
      await this.collection.bulkWrite(
        missing.map(({ _id, roomId }) => ({ updateOne: { filter: { _id, clientKey: { $exists: false } }, update: { $set: { clientKey: ownClientKey(roomId, _id) } } } })),
        { ordered: false },
      );
    }
  }

  /**
   * Stores a message; throws the driver's duplicate-key error for a `clientKey` stored before. Messages
   * stored while others are being written go together in one insert (GroupWriter), each with its own outcome.
   */
  insert(message: MessageDoc): Promise<void> {
    return this.inserts.add(message);
  }

  private readonly inserts = new GroupWriter(bulkOf<MessageDoc>((messages) => this.collection.insertMany(messages, { ordered: false })));

  /** With the room, so a sharded cluster asks the one shard that holds it. */
  findByClientKey(roomId: string, clientKey: string): Promise<MessageDoc | null> {
    return this.collection.findOne({ roomId, clientKey });
  }

  findById(id: string): Promise<MessageDoc | null> {
    return this.collection.findOne({ _id: id });
  }

  /** Up to `limit` messages of a timeline (the room's, or one message's comments) before a cursor, newest first. */
  before(roomId: string, parentId: string | null, cursor: string | null, limit: number, viewerId?: string): Promise<MessageDoc[]> {
    const filter = { roomId, parentId, ...(cursor ? { _id: { $lt: cursor } } : {}), ...(viewerId ? { hiddenFor: { $ne: viewerId } } : {}) };
    return this.collection.find(filter).sort({ _id: -1 }).limit(limit).toArray();
  }

  /** The `limit` messages of a timeline right after (newer than) a cursor, oldest first. */
  after(roomId: string, parentId: string | null, cursor: string, limit: number, viewerId?: string): Promise<MessageDoc[]> {
    return this.collection.find({ roomId, parentId, _id: { $gt: cursor }, ...(viewerId ? { hiddenFor: { $ne: viewerId } } : {}) }).sort({ _id: 1 }).limit(limit).toArray();
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
    const erased = await this.collection.find({ userId, deletedAt: null }, { projection: { _id: 1 } }).toArray();
    if (erased.length > 0) await this.collection.updateMany({ userId, deletedAt: null }, TOMBSTONE(at));
    return erased.map((message) => message._id);
  }

  /** One message deleted for everyone, a tombstone where it stood; the message before, or null when there is none (or it was deleted before). */
  tombstone(messageId: string, at: Date): Promise<MessageDoc | null> {
    return this.collection.findOneAndUpdate({ _id: messageId, deletedAt: null }, TOMBSTONE(at), { returnDocument: 'before' });
  }

  /** A new text for a message not deleted (its translations dropped: they translated the old one); the message before, or null. */
  edit(messageId: string, text: string, at: Date, mentions?: string[]): Promise<MessageDoc | null> {
    // The mentions, when the edit names them, change in the same update as the text.
    const named = mentions === undefined ? {} : { mentions };
    return this.collection.findOneAndUpdate({ _id: messageId, deletedAt: null }, { $set: { message: text, editedAt: at, translations: {}, ...named } }, { returnDocument: 'before' });
  }

  /** An app's card message given a new card (the app's answer to a press of one of its buttons); the message after, or null when it is not that app's or was deleted. */
  replaceCard(messageId: string, appId: string, card: NonNullable<MessageDoc['card']>, at: Date): Promise<MessageDoc | null> {
    return this.collection.findOneAndUpdate({ _id: messageId, appId, deletedAt: null }, { $set: { card, editedAt: at } }, { returnDocument: 'after' });
  }

  /** Hidden for one member only. */
  async hideFor(messageId: string, userId: string): Promise<void> {
    await this.collection.updateOne({ _id: messageId }, { $addToSet: { hiddenFor: userId } });
  }

  /** The ids of every message (and comment) a user wrote, erased or not. */
  async idsByAuthor(userId: string): Promise<string[]> {
    return (await this.collection.find({ userId }, { projection: { _id: 1 } }).toArray()).map((message) => message._id);
  }

  /** Replies that quote an erased author: their excerpts say the message was deleted, with no words of it. */
  async forgetRepliesTo(userId: string): Promise<void> {
    await this.collection.updateMany({ 'replyTo.userId': userId, 'replyTo.kind': { $ne: 'DELETED' } }, { $set: { 'replyTo.excerpt': null, 'replyTo.kind': 'DELETED' } });
  }

  /** The excerpt every reply to a message carries, made anew (the message was edited or deleted). */
  async updateReplies(messageId: string, excerpt: ReplyExcerpt): Promise<void> {
    await this.collection.updateMany({ 'replyTo.id': messageId }, { $set: { replyTo: excerpt } });
  }

  /** What a user wrote, oldest first (their data export). */
  byAuthor(userId: string): Promise<MessageDoc[]> {
    return this.collection.find({ userId }).sort({ _id: 1 }).toArray();
  }

  /**
   * A member's reaction added, only while they have fewer than MAX_REACTIONS_PER_MEMBER (one
   * conditional update: two at once cannot pass the limit). The message after, or null when it was
   * not added (deleted, or the member's limit reached: the caller tells which).
   */
  react(messageId: string, userId: string, emoji: string): Promise<MessageDoc | null> {
    const mine = `reactions.${userId}`;
    return this.collection.findOneAndUpdate(
      { _id: messageId, deletedAt: null, [`${mine}.${MAX_REACTIONS_PER_MEMBER - 1}`]: { $exists: false } },
      { $addToSet: { [mine]: emoji } },
      { returnDocument: 'after' },
    );
  }

  /** A member's reaction taken back; the message after. */
  unreact(messageId: string, userId: string, emoji: string): Promise<MessageDoc | null> {
    return this.collection.findOneAndUpdate({ _id: messageId, deletedAt: null }, { $pull: { [`reactions.${userId}`]: emoji } }, { returnDocument: 'after' });
  }
}
