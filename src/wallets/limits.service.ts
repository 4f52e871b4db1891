import type { z } from 'zod';
import { randomUUID } from 'node:crypto';
import type { BiometricService } from '../devices/index.js';
import type { DeviceReads } from '../devices/index.js';
import type { AdminAuditRepo } from '../platform/admin-audit.repo.js';
import type { Clock } from '../platform/clock.js';
import type { DeviceEvents } from '../platform/device-events.js';
import { page, type Page } from '../platform/paging.js';
import type { Principal } from '../platform/principal.js';
import { isDuplicateKey } from '../platform/mongo.js';
import type { Currency } from './money.js';
import type { LIMIT_TIERS, LimitRequestCreateSchema, LimitRequestDtoSchema } from './wallets.schemas.js';
import { WalletsErrors } from './wallets.errors.js';
import { CommonErrors } from '../platform/common.errors.js';
import type { LimitRequestDoc, LimitRequestsRepo } from './limits.repo.js';
import { must } from '../platform/must.js';

export type LimitRequestView = z.infer<typeof LimitRequestDtoSchema>;
type Tier = (typeof LIMIT_TIERS)[number];
type Duration = LimitRequestView['duration'];


/** What the device signs for a limit request (docs/clients/wallets.md). */
export const limitSigned = (nonce: string, tierOrNone: string, duration: Duration) => `BIOMETRIC_CONFIRM_V1|${nonce}|LIMIT_REQUEST|${tierOrNone}|${duration}`;

const TIER_FACTOR: Record<Tier, bigint> = { TIER_1: 1n, TIER_2: 10n, TIER_3: 100n };
const DAY_MS = 86_400_000;
const REFUSAL_WAIT_MS = 7 * DAY_MS;

function present(doc: LimitRequestDoc): LimitRequestView {
  return {
    id: doc._id,
    userId: doc.userId,
    tier: doc.tier,
    noLimit: doc.noLimit,
    duration: doc.duration,
    reason: doc.reason,
    status: doc.status,
    decidedAt: doc.decidedAt?.toISOString() ?? null,
    effectiveUntil: doc.effectiveUntil?.toISOString() ?? null,
    createdAt: doc.createdAt.toISOString(),
  };
}

/**
 * Sending limits (spec, "Wallets", rule 6; "States and transitions", wallet limit request). Every
 * account starts at TIER_1. A member asks for a tier or no limit, for 7 days, 30 days or until
 * changed: only from a device past its waiting period whose biometric key signs the request, with none
 * open and none refused in the last 7 days. Site administrators approve or refuse; the member's
 * devices are told; an approved limit applies to withdrawals until it expires (or, until changed,
 * until another is approved).
 */
export class LimitsService {
  constructor(
    private readonly repo: LimitRequestsRepo,
    private readonly deps: {
      devices: DeviceReads;
      biometric: BiometricService;
      events: DeviceEvents;
      isSiteAdmin: (userId: string) => Promise<boolean>;
      /** The administrators' audit log: every decision goes there. */
      audit: Pick<AdminAuditRepo, 'record'>;
      baseLimits: Record<Currency, bigint>;
      deviceWaitSeconds: number;
      clock: Clock;
    },
  ) {}

  async request(principal: Principal, input: z.infer<typeof LimitRequestCreateSchema>): Promise<LimitRequestView> {
    const device = await this.deps.devices.findById(principal.deviceId);
    const now = this.deps.clock();
    if (!device || now.getTime() - device.createdAt.getTime() < this.deps.deviceWaitSeconds * 1000) throw WalletsErrors.LIMIT_DEVICE_TOO_NEW();
    if (!device.biometricKey) throw WalletsErrors.LIMIT_NEEDS_BIOMETRIC_KEY();
    const tierOrNone = input.noLimit ? 'NONE' : must(input.tier, 'the tier the schema requires without noLimit');
    await this.deps.biometric.confirmAction(principal, input.biometric, (nonce) => limitSigned(nonce, tierOrNone, input.duration));
    const lastRefusal = await this.repo.lastRefusalOf(principal.userId);
    if (lastRefusal?.decidedAt && now.getTime() - lastRefusal.decidedAt.getTime() < REFUSAL_WAIT_MS) throw WalletsErrors.LIMIT_REFUSED_RECENTLY();
    const doc: LimitRequestDoc = {
      _id: randomUUID(),
      userId: principal.userId,
      deviceId: principal.deviceId,
      tier: input.noLimit ? null : must(input.tier, 'the tier the schema requires without noLimit'),
      noLimit: input.noLimit === true,
      duration: input.duration,
      reason: input.reason ?? null,
      status: 'OPEN',
      openKey: principal.userId,
      decidedBy: null,
      decidedAt: null,
      effectiveUntil: null,
      createdAt: now,
    };
    try {
      await this.repo.insert(doc);
    } catch (error) {
      if (isDuplicateKey(error)) throw WalletsErrors.LIMIT_REQUEST_OPEN();
      throw error;
    }
    return present(doc);
  }

  private async assertAdmin(principal: Principal): Promise<void> {
    // A member gets the same 401 as for any route they may not use (docs/clients/moderation.md).
    if (!(await this.deps.isSiteAdmin(principal.userId))) throw CommonErrors.UNAUTHORIZED();
  }

  async listForAdmin(principal: Principal, status: LimitRequestView['status'], pageSize: number, currentPage: number): Promise<Page<LimitRequestView>> {
    await this.assertAdmin(principal);
    const { items, total } = await this.repo.pageByStatus(status, pageSize, currentPage);
    return page(items.map(present), total, pageSize, currentPage);
  }

  async decide(principal: Principal, requestId: string, approve: boolean): Promise<LimitRequestView> {
    await this.assertAdmin(principal);
    const existing = await this.repo.findById(requestId);
    if (!existing) throw WalletsErrors.LIMIT_REQUEST_NOT_FOUND();
    const now = this.deps.clock();
    const days = existing.duration === 'DAYS_7' ? 7 : existing.duration === 'DAYS_30' ? 30 : null;
    const decided = await this.repo.decide(requestId, { approve, decidedBy: principal.userId, at: now, effectiveUntil: approve && days ? new Date(now.getTime() + days * DAY_MS) : null });
    if (!decided) throw WalletsErrors.LIMIT_REQUEST_DECIDED();
    await this.deps.audit.record({ adminId: principal.userId, action: approve ? 'APPROVE_LIMIT_REQUEST' : 'REFUSE_LIMIT_REQUEST', targetType: 'LIMIT_REQUEST', targetId: requestId, reason: '', at: now });
    await this.deps.events.toUsers([decided.userId], 'wallet.limit-request-decided', {
      requestId: decided._id,
      status: approve ? 'APPROVED' : 'REFUSED',
      tier: decided.tier,
      noLimit: decided.noLimit,
      effectiveUntil: decided.effectiveUntil?.toISOString() ?? null,
    });
    return present(decided);
  }

  /** The account's 24-hour sending limit in a currency now: its newest approved limit still in force, else TIER_1. Null: no limit. */
  async limitOf(userId: string, currency: Currency): Promise<bigint | null> {
    const now = this.deps.clock();
    const approved = await this.repo.newestInForce(userId, now);
    if (!approved) return this.deps.baseLimits[currency];
    if (approved.noLimit) return null;
    return this.deps.baseLimits[currency] * TIER_FACTOR[must(approved.tier, 'an approved tier')];
  }
}
