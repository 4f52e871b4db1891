import type { Collection, Db, UpdateFilter } from 'mongodb';
import { sharedCache, type CacheBus, type SharedCache } from '../platform/cache/invalidation.js';
import { findByIds, isDuplicateKey } from '../platform/mongo.js';

export const ROOM_TYPES = ['DIRECT', 'PRIVATE_GROUP', 'PUBLIC_GROUP', 'BROADCAST', 'E2EE'] as const;
export type RoomType = (typeof ROOM_TYPES)[number];

export interface RoomDoc {
  _id: string;
  type: RoomType;
  name: string | null;
  description: string | null;
  /** Readable link of public groups and broadcast rooms (from the name); null for the others. */
  link: string | null;
  /** Lower-cased words of the name, for search (no `$text`: docs/contributors/decisions.md). */
  nameWords: string[];
  creatorId: string;
  admins: string[];
  commentsEnabled: boolean;
  participantPublishEnabled: boolean;
  /** Broadcast rooms: listed for and joinable by everyone. */
  visible: boolean;
  /** DIRECT: the two user ids sorted; otherwise the room id. Unique, so a pair has one direct chat. */
  uniqueKey: string;
  memberCount: number;
  /** Language the name and description are written in (the creator's). */
  language?: string;
  /** Other language versions of a broadcast room's name and description. */
  translations?: Record<string, { name: string; description: string | null }>;
  /** Broadcast rooms: whether followers may react to posts (absent: yes). */
  reactionsEnabled?: boolean;
  /** Set when its last member left by deleting their account: nobody can find or join it any more. */
  closedAt?: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

/** A readable link: `_id` is the link; old links of renamed rooms keep pointing at their room. */
interface RoomLinkDoc {
  _id: string;
  roomId: string;
  createdAt: Date;
}

export class RoomsRepo {
  private readonly collection: Collection<RoomDoc>;
  private readonly links: Collection<RoomLinkDoc>;
  private readonly recent: SharedCache<RoomDoc | null>;

  constructor(db: Db, bus?: CacheBus) {
    this.collection = db.collection<RoomDoc>('rooms');
    this.links = db.collection<RoomLinkDoc>('room_links');
    this.recent = sharedCache<RoomDoc | null>(bus, 'room', 5_000);
  }

  /**
   * The room from a 5-second cache that every write through this repo clears in every process: for
   * hot paths (posting). Its `memberCount` may be a few joins behind; read `findById` for that.
   */
  findByIdCached(id: string): Promise<RoomDoc | null> {
    return this.recent.get(id, () => this.findById(id));
  }

  async ensureIndexes(): Promise<void> {
    await this.collection.createIndexes([
      { key: { uniqueKey: 1 }, name: 'unique_key', unique: true },
      { key: { type: 1, memberCount: -1 }, name: 'public_by_size' },
      { key: { nameWords: 1 }, name: 'name_words' },
    ]);
  }

  async insert(room: RoomDoc): Promise<void> {
    await this.collection.insertOne(room);
    await this.recent.clear(room._id);
  }

  findById(id: string): Promise<RoomDoc | null> {
    return this.collection.findOne({ _id: id });
  }

  findByUniqueKey(key: string): Promise<RoomDoc | null> {
    return this.collection.findOne({ uniqueKey: key });
  }

  /** When each of the given rooms was created, by id (rooms that do not exist are left out). */
  async createdAtOf(ids: string[]): Promise<Map<string, Date>> {
    if (ids.length === 0) return new Map();
    const docs = await findByIds(this.collection, ids, { createdAt: 1 });
    return new Map(docs.map((doc) => [doc._id, doc.createdAt]));
  }

  findManyByIds(ids: string[]): Promise<RoomDoc[]> {
    return findByIds(this.collection, ids);
  }

  /** Claims a readable link for a room; false when another room holds it (now or as a redirect). */
  async claimLink(link: string, roomId: string, now: Date): Promise<boolean> {
    try {
      await this.links.insertOne({ _id: link, roomId, createdAt: now });
      return true;
    } catch (error) {
      if (!isDuplicateKey(error)) throw error;
      return (await this.links.findOne({ _id: link }))?.roomId === roomId;
    }
  }

  async roomIdOfLink(link: string): Promise<string | null> {
    return (await this.links.findOne({ _id: link }))?.roomId ?? null;
  }

  async update(id: string, set: Partial<RoomDoc>): Promise<RoomDoc | null> {
    const updated = await this.collection.findOneAndUpdate({ _id: id }, { $set: set }, { returnDocument: 'after' });
    await this.recent.clear(id);
    return updated;
  }

  async setTranslation(id: string, language: string, version: { name: string; description: string | null } | null): Promise<RoomDoc | null> {
    const field: `translations.${string}` = `translations.${language}`;
    const update: UpdateFilter<RoomDoc> = version === null ? { $unset: { [field]: true } } : { $set: { [field]: version } };
    const updated = await this.collection.findOneAndUpdate({ _id: id }, update, { returnDocument: 'after' });
    await this.recent.clear(id);
    return updated;
  }

  async setAdmin(id: string, userId: string, admin: boolean): Promise<void> {
    await this.collection.updateOne({ _id: id }, admin ? { $addToSet: { admins: userId } } : { $pull: { admins: userId } });
    await this.recent.clear(id);
  }

  async addToMemberCount(id: string, delta: number): Promise<void> {
    await this.collection.updateOne({ _id: id }, { $inc: { memberCount: delta } });
  }

  /** Public groups, largest first, optionally those whose name has a word starting with each query word. */
  async searchPublic(words: string[], skip: number, limit: number): Promise<{ items: RoomDoc[]; total: number }> {
    const filter = {
      type: 'PUBLIC_GROUP' as const,
      closedAt: null,
      ...(words.length > 0 ? { $and: words.map((word) => ({ nameWords: { $regex: `^${word.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}` } })) } : {}),
    };
    const [items, total] = await Promise.all([
      this.collection.find(filter).sort({ memberCount: -1, createdAt: 1 }).skip(skip).limit(limit).toArray(),
      this.collection.countDocuments(filter),
    ]);
    return { items, total };
  }

  /** The rooms a user created. */
  createdBy(userId: string): Promise<RoomDoc[]> {
    return this.collection.find({ creatorId: userId }).toArray();
  }
}

/** The readable link a name maps to: lower-case ASCII words joined by hyphens. */
export function linkOf(name: string): string {
  const slug = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');
  return slug.length > 0 ? slug : `room`;
}
