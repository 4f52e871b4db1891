import { userSummary } from '../users/index.js';
import type { z } from 'zod';
import type { Principal } from '../platform/principal.js';
import type { DomainEvents } from '../platform/domain-events.js';
import type { BlockReason, BlocksRepo } from './blocks.repo.js';
import type { ConnectionRequestsRepo } from './connection-requests.repo.js';
import type { UserReads } from '../users/index.js';
import { page, type Page } from '../platform/paging.js';
import { ContactsErrors } from './contacts.errors.js';
import { UsersErrors } from '../users/users.errors.js';
import type { UserBlockDtoSchema } from './contacts.schemas.js';

/** As the UserBlockDto record of the OpenAPI document. */
export type UserBlockView = z.infer<typeof UserBlockDtoSchema>;

/**
 * Blocks (spec, "Contacts and blocks", rule 4). A block either way refuses connection requests
 * and calls, and cancels a request pending between the two.
 */
export class BlocksService {
  constructor(
    private readonly blocks: BlocksRepo,
    private readonly users: UserReads,
    private readonly requests: ConnectionRequestsRepo,
    /** Where the pictures' public addresses start. */
    private readonly publicBaseUrl: string,
    private readonly domainEvents: DomainEvents,
    private readonly clock: () => Date = () => new Date(),
  ) {}

  async block(principal: Principal, blockedUserId: string, reason: BlockReason = 'UNKNOWN'): Promise<UserBlockView> {
    if (blockedUserId === principal.userId) throw ContactsErrors.BLOCK_SELF();
    const blocked = await this.users.findById(blockedUserId);
    if (!blocked || blocked.deletedAt) throw UsersErrors.USER_NOT_FOUND();
    const now = this.clock();
    if (!(await this.blockFor(principal.userId, blockedUserId, reason, now))) throw ContactsErrors.ALREADY_BLOCKED();
    return { blockedUser: userSummary(this.publicBaseUrl, blocked, blocked._id), reason, createdAt: now.toISOString() };
  }

  /**
   * `blockerId` blocks `blockedId` (false when already blocked): what was pending between them is
   * cancelled here, and other areas cancel theirs (room invitations) on `user.blocked`.
   */
  async blockFor(blockerId: string, blockedId: string, reason: BlockReason, now = this.clock()): Promise<boolean> {
    if (!(await this.blocks.block(blockerId, blockedId, reason, now))) return false;
    await this.requests.cancelBetween(blockerId, blockedId, now);
    await this.domainEvents.emit('user.blocked', { blockerId, blockedId });
    return true;
  }

  async unblock(principal: Principal, blockedUserId: string): Promise<void> {
    if (!(await this.blocks.unblock(principal.userId, blockedUserId))) throw ContactsErrors.NOT_BLOCKED();
  }

  /** The caller's blocks, most recently blocked first. */
  async list(principal: Principal, pageSize: number, currentPage: number): Promise<Page<UserBlockView>> {
    const { items, total } = await this.blocks.pageForBlocker(principal.userId, currentPage * pageSize, pageSize);
    const users = new Map((await this.users.findManyByIds(items.map((b) => b.blockedId))).map((u) => [u._id, u]));
    return page(
      items.map((b) => ({
        blockedUser: userSummary(this.publicBaseUrl, users.get(b.blockedId), b.blockedId),
        reason: b.reason,
        createdAt: b.createdAt.toISOString(),
      })),
      total,
      pageSize,
      currentPage,
    );
  }
}
