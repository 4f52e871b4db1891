import type { z } from 'zod';
import type { Clock } from '../platform/clock.js';
import { CommonErrors } from '../platform/common.errors.js';
import type { DeviceEvents } from '../platform/device-events.js';
import type { EphemeralStore } from '../platform/ephemeral.js';
import { must } from '../platform/must.js';
import type { Principal } from '../platform/principal.js';
import type { UserSuspensions } from '../users/index.js';
import { ModerationErrors } from './moderation.errors.js';
import type { ModerationRepo, ModerationAction, ReportDoc, ReportOutcome, ReportReason, ReportTarget } from './moderation.repo.js';
import type { AdminAuditRepo } from '../platform/admin-audit.repo.js';
import type { AdminReportSchema, AuditEntrySchema, ReportDtoSchema, ReportedTargetSchema } from './moderation.schemas.js';

type ReportView = z.infer<typeof ReportDtoSchema>;
type AdminReportView = z.infer<typeof AdminReportSchema>;
type ReportedTargetView = z.infer<typeof ReportedTargetSchema>;
type AuditView = z.infer<typeof AuditEntrySchema>;

/** Each action, the target it applies to, and what the reporters are told. */
const ACTIONS: Record<ModerationAction, { target: ReportTarget | null; outcome: ReportOutcome }> = {
  DISMISS: { target: null, outcome: 'DISMISSED' },
  REMOVE_MESSAGE: { target: 'MESSAGE', outcome: 'MESSAGE_REMOVED' },
  SUSPEND_USER: { target: 'USER', outcome: 'USER_SUSPENDED' },
  UNLIST_APP: { target: 'APP', outcome: 'APP_UNLISTED' },
};

export interface ModerationDeps {
  repo: ModerationRepo;
  audit: AdminAuditRepo;
  users: UserSuspensions;
  isSiteAdmin: (userId: string) => Promise<boolean>;
  revokeAllDevices: (userId: string) => Promise<void>;
  /** The message and its author, when the caller may read it; throws otherwise. */
  readableMessage: (principal: Principal, messageId: string) => Promise<{ authorId: string; encrypted: boolean }>;
  /** Whether the caller may see the room (a member, or an open room). */
  visibleRoom: (principal: Principal, roomId: string) => Promise<boolean>;
  /** Whether the caller may see the app (listed, theirs, or installed by them). */
  visibleApp: (principal: Principal, appId: string) => Promise<boolean>;
  removeMessage: (messageId: string) => Promise<boolean>;
  unlistApp: (appId: string) => Promise<boolean>;
  block: (blockerId: string, blockedId: string, reason: ReportReason) => Promise<unknown>;
  events: Pick<DeviceEvents, 'toUsers'>;
  ephemeral: EphemeralStore;
  reportsKey: (userId: string) => string;
  reportsPerHour: number;
  clock: Clock;
}

/**
 * Reports and the site administrators' moderation (docs/clients/moderation.md): members report a
 * message, a user, a room or an app they can see; administrators see the open reports grouped by
 * target, oldest first, and act on a target (dismiss, remove the message, suspend the user, unlist
 * the app); every action goes to the audit log and each reporter is told the outcome.
 */
export class ModerationService {
  constructor(private readonly deps: ModerationDeps) {}

  async report(
    principal: Principal,
    input: { targetType: ReportTarget; targetId: string; reason: ReportReason; comment?: string | undefined; decryptedText?: string | undefined; block: boolean },
  ): Promise<ReportView> {
    const { deps } = this;
    const limit = await deps.ephemeral.hit(deps.reportsKey(principal.userId), deps.reportsPerHour, 3_600);
    if (!limit.allowed) throw ModerationErrors.TOO_MANY_REPORTS({ retryAfter: limit.retryAfter });
    const { reportedUserId, encrypted } = await this.visibleTarget(principal, input.targetType, input.targetId);
    const { report } = await deps.repo.open({
      reporterId: principal.userId,
      targetType: input.targetType,
      targetId: input.targetId,
      reason: input.reason,
      comment: input.comment && input.comment.length > 0 ? input.comment : null,
      // The server can read only what it stores in clear: the reporter's copy is kept for an encrypted message alone.
      decryptedText: encrypted && input.decryptedText ? input.decryptedText : null,
      createdAt: deps.clock(),
    });
    if (input.block && reportedUserId && reportedUserId !== principal.userId) await deps.block(principal.userId, reportedUserId, input.reason);
    return presentReport(report);
  }

  /** What the reporter may see of the target; the same 400 for a target that is missing and one they cannot see. */
  private async visibleTarget(principal: Principal, type: ReportTarget, id: string): Promise<{ reportedUserId: string | null; encrypted: boolean }> {
    const { deps } = this;
    const missing = () => ModerationErrors.REPORT_TARGET_NOT_FOUND();
    switch (type) {
      case 'MESSAGE': {
        const message = await deps.readableMessage(principal, id).catch(() => null);
        if (!message) throw missing();
        return { reportedUserId: message.authorId.startsWith('app:') ? null : message.authorId, encrypted: message.encrypted };
      }
      case 'USER': {
        if (id === principal.userId) throw ModerationErrors.REPORT_SELF();
        const user = await deps.users.findById(id);
        if (!user || user.deletedAt) throw missing();
        return { reportedUserId: id, encrypted: false };
      }
      case 'ROOM':
        if (!(await deps.visibleRoom(principal, id).catch(() => false))) throw missing();
        return { reportedUserId: null, encrypted: false };
      case 'APP':
        if (!(await deps.visibleApp(principal, id))) throw missing();
        return { reportedUserId: null, encrypted: false };
    }
  }

  /** 401, as for any route a member may not use, unless the caller is a site administrator. */
  private async admin(principal: Principal): Promise<void> {
    if (!(await this.deps.isSiteAdmin(principal.userId))) throw CommonErrors.UNAUTHORIZED();
  }

  /** Open reports grouped by target, the target reported first first, each with its count and oldest reports. */
  async queue(principal: Principal, pageSize: number, currentPage: number): Promise<{ items: ReportedTargetView[]; hasMore: boolean }> {
    await this.admin(principal);
    const byTarget = new Map<string, ReportDoc[]>();
    for (const report of await this.deps.repo.openReports()) {
      const key = `${report.targetType}:${report.targetId}`;
      const group = byTarget.get(key);
      if (group) group.push(report);
      else byTarget.set(key, [report]);
    }
    const groups = [...byTarget.values()];
    const page = groups.slice(currentPage * pageSize, (currentPage + 1) * pageSize);
    return {
      items: page.map((reports) => {
        const first = must(reports[0], 'a group\'s first report');
        return { targetType: first.targetType, targetId: first.targetId, openReports: reports.length, firstReportedAt: first.createdAt.toISOString(), reports: reports.slice(0, 20).map(presentAdminReport) };
      }),
      hasMore: groups.length > (currentPage + 1) * pageSize,
    };
  }

  /**
   * An administrator's decision on a target: the action done, every open report of it decided, each
   * reporter told by a device event, and the decision in the audit log.
   */
  async act(principal: Principal, input: { targetType: ReportTarget; targetId: string; action: ModerationAction; reason: string }): Promise<{ decidedReports: number }> {
    await this.admin(principal);
    const { deps } = this;
    const spec = ACTIONS[input.action];
    if (spec.target && spec.target !== input.targetType) throw ModerationErrors.MODERATION_ACTION_INVALID({ message: `${input.action} applies to a ${spec.target}, not a ${input.targetType}` });
    const open = await deps.repo.openReportsOf(input.targetType, input.targetId);
    if (input.action === 'DISMISS' && open.length === 0) throw ModerationErrors.NOTHING_TO_DECIDE();
    const at = deps.clock();
    switch (input.action) {
      case 'REMOVE_MESSAGE':
        if (!(await deps.removeMessage(input.targetId))) throw ModerationErrors.REPORT_TARGET_NOT_FOUND();
        break;
      case 'SUSPEND_USER':
        if (!(await deps.users.setSuspension(input.targetId, { reason: input.reason, by: principal.userId, at }, at))) throw ModerationErrors.REPORT_TARGET_NOT_FOUND();
        await deps.revokeAllDevices(input.targetId);
        break;
      case 'UNLIST_APP':
        if (!(await deps.unlistApp(input.targetId))) throw ModerationErrors.REPORT_TARGET_NOT_FOUND();
        break;
      case 'DISMISS':
        break;
    }
    await deps.audit.record({ adminId: principal.userId, action: input.action, targetType: input.targetType, targetId: input.targetId, reason: input.reason, at });
    const decided = await deps.repo.decide(open, spec.outcome, at);
    for (const report of decided) {
      await deps.events.toUsers([report.reporterId], 'report.decided', { reportId: report._id, targetType: report.targetType, targetId: report.targetId, outcome: spec.outcome });
    }
    return { decidedReports: decided.length };
  }

  /** Lifts a suspension: sign-in works again (the devices signed out stay signed out). */
  async liftSuspension(principal: Principal, userId: string, reason: string): Promise<void> {
    await this.admin(principal);
    const at = this.deps.clock();
    if (!(await this.deps.users.setSuspension(userId, null, at))) throw ModerationErrors.REPORT_TARGET_NOT_FOUND();
    await this.deps.audit.record({ adminId: principal.userId, action: 'LIFT_SUSPENSION', targetType: 'USER', targetId: userId, reason, at });
  }

  async audit(principal: Principal, pageSize: number, currentPage: number): Promise<{ items: AuditView[]; hasMore: boolean }> {
    await this.admin(principal);
    const entries = await this.deps.audit.page(currentPage * pageSize, pageSize + 1);
    return {
      items: entries.slice(0, pageSize).map((entry) => ({ id: entry._id, adminId: entry.adminId, action: entry.action, targetType: entry.targetType, targetId: entry.targetId, reason: entry.reason, at: entry.at.toISOString() })),
      hasMore: entries.length > pageSize,
    };
  }

  /** A report of a user made in another step (declining their room invitation): counted like any report. */
  async reportUser(reporterId: string, userId: string, reason: ReportReason, comment: string | null): Promise<void> {
    const { deps } = this;
    const limit = await deps.ephemeral.hit(deps.reportsKey(reporterId), deps.reportsPerHour, 3_600);
    if (!limit.allowed) return;
    await deps.repo.open({ reporterId, targetType: 'USER', targetId: userId, reason, comment, decryptedText: null, createdAt: deps.clock() });
  }
}

function presentReport(report: ReportDoc): ReportView {
  return {
    id: report._id,
    targetType: report.targetType,
    targetId: report.targetId,
    reason: report.reason,
    comment: report.comment,
    status: report.status,
    outcome: report.outcome,
    createdAt: report.createdAt.toISOString(),
  };
}

function presentAdminReport(report: ReportDoc): AdminReportView {
  return { ...presentReport(report), reporterId: report.reporterId, decryptedText: report.decryptedText };
}
