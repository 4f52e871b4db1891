import { randomUUID } from 'node:crypto';
import type { Collection, Db } from 'mongodb';
import { isDuplicateKey } from '../platform/mongo.js';
import type { MODERATION_ACTIONS, REPORT_REASONS, REPORT_TARGETS } from './moderation.schemas.js';

export type ReportTarget = (typeof REPORT_TARGETS)[number];
export type ReportReason = (typeof REPORT_REASONS)[number];
export type ModerationAction = (typeof MODERATION_ACTIONS)[number];
export type ReportOutcome = 'DISMISSED' | 'MESSAGE_REMOVED' | 'USER_SUSPENDED' | 'APP_UNLISTED';

export interface ReportDoc {
  _id: string;
  reporterId: string;
  targetType: ReportTarget;
  targetId: string;
  reason: ReportReason;
  comment: string | null;
  /** End-to-end encrypted messages: the text as the reporter's device decrypted it, supplied by them, unverified. */
  decryptedText: string | null;
  status: 'OPEN' | 'DECIDED';
  outcome: ReportOutcome | null;
  /** `<reporterId>:<targetType>:<targetId>` while open: one open report per reporter and target (unique). */
  openKey?: string;
  createdAt: Date;
  decidedAt: Date | null;
}

/** How many open reports the queue reads at most to group them (the oldest first). */
const QUEUE_WINDOW = 5_000;

export class ModerationRepo {
  private readonly reports: Collection<ReportDoc>;

  constructor(db: Db) {
    this.reports = db.collection<ReportDoc>('reports');
  }

  async ensureIndexes(): Promise<void> {
    await this.reports.createIndexes([
      { key: { openKey: 1 }, name: 'one_open_per_reporter_and_target', unique: true, sparse: true },
      { key: { status: 1, createdAt: 1 }, name: 'queue' },
      { key: { targetType: 1, targetId: 1, status: 1 }, name: 'by_target' },
    ]);
  }

  /** The report, or the open one the reporter made of this target before (a repeat answers the first). */
  /** A deleted account's reports: their comments (its words) emptied; the reports stay for the moderators, by its id. */
  async eraseCommentsOf(reporterId: string): Promise<void> {
    await this.reports.updateMany({ reporterId }, { $set: { comment: null } });
  }

  async open(report: Omit<ReportDoc, '_id' | 'openKey' | 'status' | 'outcome' | 'decidedAt'>): Promise<{ report: ReportDoc; created: boolean }> {
    const openKey = `${report.reporterId}:${report.targetType}:${report.targetId}`;
    const doc: ReportDoc = { ...report, _id: randomUUID(), status: 'OPEN', outcome: null, openKey, decidedAt: null };
    try {
      await this.reports.insertOne(doc);
      return { report: doc, created: true };
    } catch (error) {
      const first = isDuplicateKey(error) ? await this.reports.findOne({ openKey }) : null;
      if (!first) throw error;
      return { report: first, created: false };
    }
  }

  /** Open reports, oldest first (at most QUEUE_WINDOW: the queue groups them by target). */
  openReports(): Promise<ReportDoc[]> {
    return this.reports.find({ status: 'OPEN' }).sort({ createdAt: 1, _id: 1 }).limit(QUEUE_WINDOW).toArray();
  }

  openReportsOf(targetType: ReportTarget, targetId: string): Promise<ReportDoc[]> {
    return this.reports.find({ targetType, targetId, status: 'OPEN' }).toArray();
  }

  /** The target's open reports decided with `outcome`; the ones this call decided. */
  async decide(reports: ReportDoc[], outcome: ReportOutcome, at: Date): Promise<ReportDoc[]> {
    const decided: ReportDoc[] = [];
    for (const report of reports) {
      const done = await this.reports.updateOne({ _id: report._id, status: 'OPEN' }, { $set: { status: 'DECIDED', outcome, decidedAt: at }, $unset: { openKey: '' } });
      if (done.modifiedCount === 1) decided.push(report);
    }
    return decided;
  }
}
