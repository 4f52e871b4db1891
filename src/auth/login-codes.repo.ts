import type { Collection, Db } from 'mongodb';

export interface LoginCodeDoc {
  _id: string;
  phone: string;
  /** argon2id hash of the six digits; the digits themselves are never stored. */
  codeHash: string;
  attempts: number;
  createdAt: Date;
  expiresAt: Date;
  consumedAt: Date | null;
}

export class LoginCodesRepo {
  private readonly collection: Collection<LoginCodeDoc>;

  constructor(db: Db) {
    this.collection = db.collection<LoginCodeDoc>('login_codes');
  }

  async ensureIndexes(): Promise<void> {
    await this.collection.createIndexes([
      { key: { phone: 1, createdAt: -1 }, name: 'phone_latest' },
      // Declared for MongoDB 7; nothing relies on it (the clean-up job removes expired rows).
      { key: { expiresAt: 1 }, name: 'expires_ttl', expireAfterSeconds: 3600 },
    ]);
  }

  async insert(code: LoginCodeDoc): Promise<void> {
    await this.collection.insertOne(code);
  }

  /** The newest code for the number that is unused and unexpired. */
  findLatestLive(phone: string, now: Date): Promise<LoginCodeDoc | null> {
    return this.collection.findOne({ phone, consumedAt: null, expiresAt: { $gt: now } }, { sort: { createdAt: -1 } });
  }

  /** Takes one try of the code; null when it has no tries left (then it is dead). */
  takeAttempt(id: string, maxAttempts: number, now: Date): Promise<LoginCodeDoc | null> {
    return this.collection.findOneAndUpdate(
      { _id: id, consumedAt: null, expiresAt: { $gt: now }, attempts: { $lt: maxAttempts } },
      { $inc: { attempts: 1 } },
      { returnDocument: 'after' },
    );
  }

  /** Marks the code used; true for exactly one caller. */
  async consume(id: string, now: Date): Promise<boolean> {
    const result = await this.collection.updateOne({ _id: id, consumedAt: null }, { $set: { consumedAt: now } });
    return result.modifiedCount === 1;
  }

  /** Retires every live code of the number, so only the newest one sent works. */
  async retireLive(phone: string, now: Date): Promise<void> {
    await this.collection.updateMany({ phone, consumedAt: null }, { $set: { consumedAt: now } });
  }

  /** Every code sent to a number (its account deleted): they held the number. */
  async forgetPhone(phone: string): Promise<void> {
    await this.collection.deleteMany({ phone });
  }

  async deleteExpired(before: Date): Promise<number> {
    const result = await this.collection.deleteMany({ expiresAt: { $lt: before } });
    return result.deletedCount;
  }
}
