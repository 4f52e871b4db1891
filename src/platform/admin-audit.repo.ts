import { randomUUID } from 'node:crypto';
import type { Collection, Db } from 'mongodb';

/** One site administrator's action: who, what, on what, why, when. Never changed or removed. */
export interface AuditDoc {
  _id: string;
  adminId: string;
  /** SUSPEND_USER, REMOVE_MESSAGE, APPROVE_LIMIT_REQUEST, GRANT_REPLY_TIME, … */
  action: string;
  targetType: string;
  targetId: string;
  reason: string;
  at: Date;
}

/**
 * The one audit log of administrators' actions (`admin_audit`), written by every area whose rule an
 * administrator decides (moderation, wallet limits, apps' reply times) and read by GET /api/admin/audit.
 */
export class AdminAuditRepo {
  private readonly collection: Collection<AuditDoc>;

  constructor(db: Db) {
    this.collection = db.collection<AuditDoc>('admin_audit');
  }

  async ensureIndexes(): Promise<void> {
    await this.collection.createIndexes([{ key: { at: -1 }, name: 'newest_first' }]);
  }

  async record(entry: Omit<AuditDoc, '_id'>): Promise<void> {
    await this.collection.insertOne({ ...entry, _id: randomUUID() });
  }

  /** The audit log, newest first. */
  page(skip: number, limit: number): Promise<AuditDoc[]> {
    return this.collection.find({}).sort({ at: -1, _id: 1 }).skip(skip).limit(limit).toArray();
  }
}
