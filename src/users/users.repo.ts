import { randomUUID } from 'node:crypto';
import type { Collection, Db } from 'mongodb';
import { isDuplicateKey } from '../platform/mongo.js';

export interface TwoFactorState {
  enabled: boolean;
  /** Base32 TOTP secret in force; replaced with a fresh unused one when two-factor is disabled. */
  secret: string | null;
  /** Secret handed out by setup and not yet confirmed by `enable`. */
  pendingSecret: string | null;
  /** Highest TOTP time step accepted so far: a code is good once. */
  lastStep: number;
}

/** Which stored picture is a user's profile picture: its files are under `avatars/<userId>/<version>/`. */
export interface AvatarRef {
  version: string;
  updatedAt: Date;
}

/** Who may add the user to rooms (issue 32): `everyone` asks first, `connections` only lets connections add, `nobody` refuses all but connections' direct chats. */
export const ROOM_INVITES = ['everyone', 'connections', 'nobody'] as const;
export type RoomInvitesSetting = (typeof ROOM_INVITES)[number];

export interface UserDoc {
  _id: string;
  phone: string;
  /** Optional; absent (not null) when unset, so the sparse unique index leaves it out. */
  email?: string;
  displayName: string | null;
  language: string;
  twoFactor: TwoFactorState;
  /** The current profile picture; absent or null when there is none. */
  avatar?: AvatarRef | null;
  /** Absent: `everyone`. */
  roomInvites?: RoomInvitesSetting;
  /** Read receipts (absent: on); off, the user neither sends them nor sees others'. */
  readReceipts?: boolean;
  /**
   * Set when the user deleted their account: the phone number is freed at once (it reads
   * `deleted:<id>`), the profile is erased by the deletion's steps, and everywhere the user appears
   * they read as a deleted account.
   */
  deletedAt?: Date | null;
  /** Set while a site administrator has suspended the account: sign-in is refused with the reason. */
  suspension?: { reason: string; by: string; at: Date } | null;
  createdAt: Date;
  updatedAt: Date;
}

/** What a user changes of their own record. */
export interface ProfileChanges { displayName?: string; language?: string; email?: string; roomInvites?: RoomInvitesSetting; readReceipts?: boolean }

export class UsersRepo {
  private readonly collection: Collection<UserDoc>;

  constructor(db: Db) {
    this.collection = db.collection<UserDoc>('users');
  }

  async ensureIndexes(): Promise<void> {
    await this.collection.createIndexes([
      { key: { phone: 1 }, name: 'phone_unique', unique: true },
      { key: { email: 1 }, name: 'email_unique', unique: true, sparse: true },
    ]);
  }

  findById(id: string): Promise<UserDoc | null> {
    return this.collection.findOne({ _id: id });
  }

  findByPhone(phone: string): Promise<UserDoc | null> {
    return this.collection.findOne({ phone });
  }

  findByEmail(email: string): Promise<UserDoc | null> {
    return this.collection.findOne({ email });
  }

  findManyByIds(ids: string[]): Promise<UserDoc[]> {
    return this.collection.find({ _id: { $in: ids } }).toArray();
  }

  /** The user with this phone number, created on first sight. Safe under concurrent first logins. */
  async findOrCreateByPhone(phone: string, now: Date): Promise<UserDoc> {
    for (let attempt = 0; ; attempt++) {
      try {
        const user = await this.collection.findOneAndUpdate(
          { phone },
          {
            $setOnInsert: {
              _id: randomUUID(),
              phone,
              displayName: null,
              language: 'en',
              twoFactor: { enabled: false, secret: null, pendingSecret: null, lastStep: 0 },
              createdAt: now,
              updatedAt: now,
            },
          },
          { upsert: true, returnDocument: 'after' },
        );
        if (user) return user;
      } catch (error) {
        // Two concurrent upserts: the loser hits the unique index and reads the winner's row.
        if (!isDuplicateKey(error) || attempt > 2) throw error;
      }
    }
  }

  async updateProfile(id: string, changes: ProfileChanges, now: Date): Promise<UserDoc | null> {
    return this.collection.findOneAndUpdate({ _id: id }, { $set: { ...changes, updatedAt: now } }, { returnDocument: 'after' });
  }

  /** Points the user at a picture (or none); the record as it was before, null when there is no such user. */
  setAvatar(id: string, avatar: AvatarRef | null): Promise<UserDoc | null> {
    return this.collection.findOneAndUpdate({ _id: id }, { $set: { avatar, updatedAt: avatar?.updatedAt ?? new Date() } }, { returnDocument: 'before' });
  }

  async setPendingSecret(id: string, secret: string, now: Date): Promise<void> {
    await this.collection.updateOne({ _id: id }, { $set: { 'twoFactor.pendingSecret': secret, updatedAt: now } });
  }

  /** Turns two-factor on with the pending secret, only if it is still off and that secret still pending. */
  enableTwoFactor(id: string, pendingSecret: string, step: number, now: Date): Promise<UserDoc | null> {
    return this.collection.findOneAndUpdate(
      { _id: id, 'twoFactor.enabled': false, 'twoFactor.pendingSecret': pendingSecret },
      {
        $set: {
          'twoFactor.enabled': true,
          'twoFactor.secret': pendingSecret,
          'twoFactor.pendingSecret': null,
          'twoFactor.lastStep': step,
          updatedAt: now,
        },
      },
      { returnDocument: 'after' },
    );
  }

  /** Turns two-factor off, replacing the secret so the old authenticator entry stops working. */
  disableTwoFactor(id: string, currentSecret: string, replacement: string, now: Date): Promise<UserDoc | null> {
    return this.collection.findOneAndUpdate(
      { _id: id, 'twoFactor.enabled': true, 'twoFactor.secret': currentSecret },
      {
        $set: {
          'twoFactor.enabled': false,
          'twoFactor.secret': replacement,
          'twoFactor.pendingSecret': null,
          updatedAt: now,
        },
      },
      { returnDocument: 'after' },
    );
  }

  /** Records a used TOTP step; false when that step (or a later one) was already used. */
  async claimTotpStep(id: string, step: number): Promise<boolean> {
    const result = await this.collection.updateOne({ _id: id, 'twoFactor.lastStep': { $lt: step } }, { $set: { 'twoFactor.lastStep': step } });
    return result.modifiedCount === 1;
  }

  /**
   * The account deleted, at once: its phone number and e-mail address free (a new sign-in with the
   * number makes a new account), the user shown as a deleted account. Once: false when already deleted.
   */
  async markDeleted(userId: string, at: Date): Promise<boolean> {
    const marked = await this.collection.updateOne({ _id: userId, deletedAt: null }, { $set: { deletedAt: at, phone: `deleted:${userId}`, updatedAt: at }, $unset: { email: '' } });
    return marked.modifiedCount === 1;
  }

  /** What was personal in a deleted account's record: its name, picture, settings and two-factor secret. */
  async eraseProfile(userId: string, at: Date): Promise<void> {
    await this.collection.updateOne(
      { _id: userId, deletedAt: { $ne: null } },
      { $set: { displayName: null, avatar: null, language: 'en', twoFactor: { enabled: false, secret: null, pendingSecret: null, lastStep: 0 }, updatedAt: at }, $unset: { roomInvites: '', email: '' } },
    );
  }

  /** Suspends the account (a site administrator's decision), or lifts the suspension (null). */
  async setSuspension(userId: string, suspension: UserDoc['suspension'], at: Date): Promise<boolean> {
    const changed = await this.collection.updateOne({ _id: userId, deletedAt: null }, { $set: { suspension: suspension ?? null, updatedAt: at } });
    return changed.matchedCount === 1;
  }
}
