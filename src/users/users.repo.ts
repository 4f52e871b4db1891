import type { NotificationSettings } from './quiet.js';
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
  /**
   * The confirmed e-mail address: used for matching connection requests and for mail. Absent (not
   * null) when unset, so the sparse unique index leaves it out. Set only by confirming a code sent
   * to the address (`pendingEmail`).
   */
  email?: string;
  /** When `email` was confirmed. An address stored before confirmation existed has none, and counts as unconfirmed. */
  emailConfirmedAt?: Date;
  /** An address the user gave and has not confirmed yet: the hash of the code mailed to it, its expiry, wrong tries. */
  pendingEmail?: { address: string; codeHash: string; expiresAt: Date; wrongTries: number } | null;
  displayName: string | null;
  language: string;
  twoFactor: TwoFactorState;
  /** The current profile picture; absent or null when there is none. */
  avatar?: AvatarRef | null;
  /** Absent: `everyone`. */
  roomInvites?: RoomInvitesSetting;
  /** Read receipts (absent: on); off, the user neither sends them nor sees others'. */
  readReceipts?: boolean;
  /** Do-not-disturb and quiet hours (absent: none; calls from connections ring). */
  notifications?: NotificationSettings;
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
export interface ProfileChanges { displayName?: string; language?: string; roomInvites?: RoomInvitesSetting; readReceipts?: boolean; pendingEmail?: UserDoc['pendingEmail'] }

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

  /** The account that confirmed this address; none for an address not (yet) confirmed. */
  findByEmail(email: string): Promise<UserDoc | null> {
    return this.collection.findOne({ email, emailConfirmedAt: { $exists: true } });
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

  async setNotifications(id: string, settings: NotificationSettings, now: Date): Promise<UserDoc | null> {
    return this.collection.findOneAndUpdate({ _id: id, deletedAt: null }, { $set: { notifications: settings, updatedAt: now } }, { returnDocument: 'after' });
  }

  async updateProfile(id: string, changes: ProfileChanges, now: Date): Promise<UserDoc | null> {
    return this.collection.findOneAndUpdate({ _id: id }, { $set: { ...changes, updatedAt: now } }, { returnDocument: 'after' });
  }

  /** Points the user at a picture (or none); the record as it was before, null when there is no such user. */
  setAvatar(id: string, avatar: AvatarRef | null): Promise<UserDoc | null> {
    return this.collection.findOneAndUpdate({ _id: id }, { $set: { avatar, updatedAt: avatar?.updatedAt ?? new Date() } }, { returnDocument: 'before' });
  }

  /** One more wrong code for the pending address; the pending address goes at `max`. The record after. */
  wrongEmailCode(id: string, max: number): Promise<UserDoc | null> {
    return this.collection.findOneAndUpdate({ _id: id, pendingEmail: { $ne: null } }, { $inc: { 'pendingEmail.wrongTries': 1 } }, { returnDocument: 'after' }).then(async (user) => {
      if (user?.pendingEmail && user.pendingEmail.wrongTries >= max) await this.collection.updateOne({ _id: id }, { $set: { pendingEmail: null } });
      return user;
    });
  }

  /**
   * The user proved the address: it becomes theirs, and any other account that had it confirmed loses
   * it (whoever reads that mailbox now is its owner). The record after.
   */
  async confirmEmail(id: string, address: string, now: Date): Promise<UserDoc | null> {
    for (let attempt = 1; ; attempt++) {
      await this.collection.updateMany({ email: address, _id: { $ne: id } }, { $unset: { email: '', emailConfirmedAt: '' }, $set: { updatedAt: now } });
      try {
        return await this.collection.findOneAndUpdate({ _id: id }, { $set: { email: address, emailConfirmedAt: now, pendingEmail: null, updatedAt: now } }, { returnDocument: 'after' });
      } catch (error) {
        // Another confirmation of the same address raced this one: the last to confirm keeps it.
        if (!isDuplicateKey(error) || attempt === 3) throw error;
      }
    }
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
    const marked = await this.collection.updateOne({ _id: userId, deletedAt: null }, { $set: { deletedAt: at, phone: `deleted:${userId}`, pendingEmail: null, updatedAt: at }, $unset: { email: '', emailConfirmedAt: '' } });
    return marked.modifiedCount === 1;
  }

  /** What was personal in a deleted account's record: its name, picture, settings and two-factor secret. */
  async eraseProfile(userId: string, at: Date): Promise<void> {
    await this.collection.updateOne(
      { _id: userId, deletedAt: { $ne: null } },
      { $set: { displayName: null, avatar: null, language: 'en', twoFactor: { enabled: false, secret: null, pendingSecret: null, lastStep: 0 }, pendingEmail: null, updatedAt: at }, $unset: { roomInvites: '', email: '', emailConfirmedAt: '', notifications: '' } },
    );
  }

  /** Suspends the account (a site administrator's decision), or lifts the suspension (null). */
  async setSuspension(userId: string, suspension: UserDoc['suspension'], at: Date): Promise<boolean> {
    const changed = await this.collection.updateOne({ _id: userId, deletedAt: null }, { $set: { suspension: suspension ?? null, updatedAt: at } });
    return changed.matchedCount === 1;
  }
}
