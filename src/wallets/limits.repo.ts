import type { Collection, Db } from 'mongodb';
import type { z } from 'zod';
import type { LimitRequestDtoSchema } from './wallets.schemas.js';

type LimitRequestView = z.infer<typeof LimitRequestDtoSchema>;

type Tier = NonNullable<LimitRequestView['tier']>;
type Duration = LimitRequestView['duration'];

export interface LimitRequestDoc {
  _id: string;
  userId: string;
  deviceId: string;
  tier: Tier | null;
  noLimit: boolean;
  duration: Duration;
  reason: string | null;
  status: LimitRequestView['status'];
  /** `<userId>` while OPEN (unique: one open request per account); removed when decided. */
  openKey?: string;
  decidedBy: string | null;
  decidedAt: Date | null;
  effectiveUntil: Date | null;
  createdAt: Date;
}

/** Requests for a higher sending limit (`wallet_limit_requests`): at most one open per account (a sparse unique key). */
export class LimitRequestsRepo {
  private readonly requests: Collection<LimitRequestDoc>;

  constructor(db: Db) {
    this.requests = db.collection<LimitRequestDoc>('wallet_limit_requests');
  }

  async ensureIndexes(): Promise<void> {
    await this.requests.createIndexes([
      { key: { openKey: 1 }, name: 'one_open_per_account', unique: true, sparse: true },
      { key: { userId: 1, createdAt: -1 }, name: 'of_user' },
      { key: { status: 1, createdAt: 1 }, name: 'by_status' },
    ]);
  }

  /** Throws the driver's duplicate-key error while the account has an open request. */
  async insert(doc: LimitRequestDoc): Promise<void> {
    await this.requests.insertOne(doc);
  }

  findById(requestId: string): Promise<LimitRequestDoc | null> {
    return this.requests.findOne({ _id: requestId });
  }

  /** The account's most recently refused request. */
  lastRefusalOf(userId: string): Promise<LimitRequestDoc | null> {
    return this.requests.find({ userId, status: 'REFUSED' }).sort({ decidedAt: -1 }).limit(1).next();
  }

  /** One page of the requests in a status, oldest first, and how many there are. */
  async pageByStatus(status: LimitRequestDoc['status'], pageSize: number, currentPage: number): Promise<{ items: LimitRequestDoc[]; total: number }> {
    const [items, total] = await Promise.all([
      this.requests.find({ status }).sort({ createdAt: 1, _id: 1 }).skip(currentPage * pageSize).limit(pageSize).toArray(),
      this.requests.countDocuments({ status }),
    ]);
    return { items, total };
  }

  /** Decides an open request (approved or refused, by whom, until when); null when it was not open. */
  decide(requestId: string, decision: { approve: boolean; decidedBy: string; at: Date; effectiveUntil: Date | null }): Promise<LimitRequestDoc | null> {
    return this.requests.findOneAndUpdate(
      { _id: requestId, status: 'OPEN' },
      {
        $set: { status: decision.approve ? 'APPROVED' : 'REFUSED', decidedBy: decision.decidedBy, decidedAt: decision.at, effectiveUntil: decision.effectiveUntil },
        $unset: { openKey: '' },
      },
      { returnDocument: 'after' },
    );
  }

  /** The account's newest approved request still in force at `now`. */
  newestInForce(userId: string, now: Date): Promise<LimitRequestDoc | null> {
    return this.requests
      .find({ userId, status: 'APPROVED', $or: [{ effectiveUntil: null }, { effectiveUntil: { $gt: now } }] })
      .sort({ decidedAt: -1 })
      .limit(1)
      .next();
  }
}
