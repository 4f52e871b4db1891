import type { z } from 'zod';
import type { Clock } from '../platform/clock.js';
import type { Principal } from '../platform/principal.js';
import type { DeviceEvents } from '../platform/device-events.js';
import type { DomainEvents } from '../platform/domain-events.js';
import type { EphemeralStore } from '../platform/ephemeral.js';
import type { BlockReads, BlockReason, BlockWrites, ConnectionReads } from '../contacts/index.js';
import { ContactsErrors } from '../contacts/contacts.errors.js';
import { userSummary, type UserDoc, type UserReads } from '../users/index.js';
import { UsersErrors } from '../users/users.errors.js';
import { page, type Page } from '../platform/paging.js';
import type { RoomInvitationDoc, RoomInvitationsRepo } from './room-invitations.repo.js';
import type { RoomMembersRepo } from './room-members.repo.js';
import type { RoomMembership } from './room-membership.js';
import type { RoomDoc, RoomType, RoomsRepo } from './rooms.repo.js';
import { isManager, type RoomsPolicy } from './rooms.policy.js';
import { presentRoom } from './room-view.js';
import { RoomsErrors } from './rooms.errors.js';
import type { RoomInvitationDtoSchema } from './rooms.schemas.js';
import { takeWithinLimit } from '../platform/limits.js';

/** As the RoomInvitationDto record of the OpenAPI document. */
export type RoomInvitationView = z.infer<typeof RoomInvitationDtoSchema>;

/** How a user comes into a room someone else brings them to: at once (a connection of the adder), or asked first. */
export type Admission = 'ADD' | 'INVITE';

/** What bringing one user into a room did. */
export type AdmissionOutcome = 'ADDED' | 'INVITED' | 'ALREADY_MEMBER' | 'ALREADY_INVITED' | 'DECLINED';

/**
 * Who can reach whom (issue 32): a user brought into a room by someone they are not connected to is
 * invited, not made a member, and accepts or declines; their `roomInvites` setting may refuse such
 * invitations, or every addition but a connection's direct chat. A block either way refuses both.
 */
export class RoomInvitationsService {
  constructor(
    private readonly deps: {
      rooms: RoomsRepo;
      members: RoomMembersRepo;
      invitations: RoomInvitationsRepo;
      membership: RoomMembership;
      policy: RoomsPolicy;
      users: UserReads;
      connections: ConnectionReads;
      blocks: BlockReads;
      blocker: BlockWrites;
      events: DeviceEvents;
      domainEvents: DomainEvents;
      publicBaseUrl: string;
      /** Invitations to strangers: per inviter and hour, and how many may wait for one invitee. */
      limits: { perHour: number; waiting: number; ephemeral: EphemeralStore; key: (inviterId: string) => string; slotKey: (inviteeId: string) => string };
      clock: Clock;
    },
  ) {}

  /**
   * How each of `userIds` may come into a room of `roomType` that `adderId` brings them to; throws,
   * having changed nothing, when any one of them may not (unknown, blocked either way, or their
   * setting refuses the adder). The answer to a block does not say who blocked whom.
   */
  async admissions(adderId: string, roomType: RoomType, userIds: string[]): Promise<Map<string, Admission>> {
    const users = (await this.deps.users.findManyByIds(userIds)).filter((user) => !user.deletedAt);
    if (users.length !== userIds.length) throw UsersErrors.USER_NOT_FOUND({ message: 'A member id is not a user' });
    const connected = await this.deps.connections.connectedAmong(adderId, userIds);
    const admissions = new Map<string, Admission>();
    for (const user of users) {
      await this.assertNoBlock(adderId, user._id);
      admissions.set(user._id, admissionOf(user, connected.has(user._id), roomType));
    }
    const releases = await this.assertInvitationsAllowed(adderId, [...admissions].filter(([, admission]) => admission === 'INVITE').map(([userId]) => userId));
    this.waitingSlots.set(admissions, releases);
    return admissions;
  }

  /** The waiting-invitation slots each decided admission holds until admit() has made its invitation. */
  private readonly waitingSlots = new WeakMap<Map<string, Admission>, Map<string, () => Promise<void>>>();

  /**
   * Invitations to strangers are bounded, before anything is made: per inviter and hour across all
   * rooms (each invitation counts), and per invitee (how many may wait). 429 with Retry-After.
   */
  private async assertInvitationsAllowed(inviterId: string, inviteeIds: string[]): Promise<Map<string, () => Promise<void>>> {
    const { perHour, waiting, ephemeral, key, slotKey } = this.deps.limits;
    const releases = new Map<string, () => Promise<void>>();
    try {
      for (const inviteeId of inviteeIds) {
        // Held until the invitation is made (admit): concurrent invitations each count the others'.
        const release = await takeWithinLimit(ephemeral, slotKey(inviteeId), {
          limit: waiting,
          settled: () => this.deps.invitations.countPendingFor(inviteeId),
          refuse: () => RoomsErrors.TOO_MANY_INVITATIONS({ message: 'This person has too many invitations waiting from people they are not connected to', retryAfter: 3_600 }),
        });
        releases.set(inviteeId, release);
        const hit = await ephemeral.hit(key(inviterId), perHour, 3_600);
        if (!hit.allowed) throw RoomsErrors.TOO_MANY_INVITATIONS({ retryAfter: hit.retryAfter });
      }
    } catch (error) {
      await Promise.all([...releases.values()].map((release) => release()));
      throw error;
    }
    return releases;
  }

  /** 400 when either of two users blocked the other; the answer does not say which. */
  async assertNoBlock(a: string, b: string): Promise<void> {
    if (await this.deps.blocks.eitherBlocked(a, b)) throw ContactsErrors.BLOCKED();
  }

  /** Adds or invites each user as decided by `admissions`; what it did for each. */
  async admit(room: RoomDoc, adderId: string, admissions: Map<string, Admission>): Promise<Map<string, AdmissionOutcome>> {
    const outcomes = new Map<string, AdmissionOutcome>();
    const slots = this.waitingSlots.get(admissions);
    try {
      for (const [userId, admission] of admissions) {
        if (admission === 'ADD') {
          await this.deps.membership.join(room, userId);
          outcomes.set(userId, 'ADDED');
        } else {
          outcomes.set(userId, await this.invite(room, adderId, userId));
          // The invitation now counts among those waiting: its slot goes back.
          await slots?.get(userId)?.();
          slots?.delete(userId);
        }
      }
    } finally {
      await Promise.all([...(slots?.values() ?? [])].map((release) => release()));
      this.waitingSlots.delete(admissions);
    }
    return outcomes;
  }

  private async invite(room: RoomDoc, inviterId: string, inviteeId: string): Promise<AdmissionOutcome> {
    if ((await this.deps.members.find(room._id, inviteeId))?.active) return 'ALREADY_MEMBER';
    const result = await this.deps.invitations.invite(room._id, inviteeId, inviterId, this.deps.clock());
    if (!result.created) return result.invitation?.status === 'DECLINED' ? 'DECLINED' : 'ALREADY_INVITED';
    const inviter = await this.deps.users.findById(inviterId);
    // One stranger's invitations are pushed once: a second one waiting is told to live sockets only.
    const alreadyPushed = (await this.deps.invitations.countPendingBetween(inviterId, inviteeId)) > 1;
    await this.deps.events.toUsers(
      [inviteeId],
      'room.invitation',
      { roomId: room._id, roomType: room.type, roomName: room.name, inviter: { id: inviterId, displayName: inviter?.displayName ?? null } },
      { push: !alreadyPushed },
    );
    return 'INVITED';
  }

  /** The caller's pending invitations, newest first. */
  async listMine(principal: Principal, pageSize: number, currentPage: number): Promise<Page<RoomInvitationView>> {
    const { items, total } = await this.deps.invitations.pendingForInvitee(principal.userId, currentPage * pageSize, pageSize);
    return page(await this.present(items), total, pageSize, currentPage);
  }

  /** A room's pending invitations, for its creator and admins. */
  async listOfRoom(principal: Principal, roomId: string, pageSize: number, currentPage: number): Promise<Page<RoomInvitationView>> {
    await this.deps.policy.managedRoom(principal, roomId);
    const { items, total } = await this.deps.invitations.pendingOfRoom(roomId, currentPage * pageSize, pageSize);
    return page(await this.present(items), total, pageSize, currentPage);
  }

  /** One pending invitation, as the view (after an admin invited someone). */
  async pending(roomId: string, inviteeId: string): Promise<RoomInvitationView> {
    const invitation = await this.deps.invitations.find(roomId, inviteeId);
    if (invitation?.status !== 'PENDING') throw RoomsErrors.INVITATION_NOT_FOUND();
    return must1(await this.present([invitation]));
  }

  /**
   * Accepting makes the caller a member (the inviter is told); declining may carry a reason, and with
   * `block` also blocks the inviter, as declining a connection request does.
   */
  async answer(principal: Principal, roomId: string, input: { accept: boolean; reason?: BlockReason; block: boolean; report: boolean }): Promise<RoomInvitationView> {
    if (input.accept && (input.block || input.report)) throw ContactsErrors.ACCEPT_WITH_BLOCK({ message: 'An invitation accepted cannot also block or report the inviter' });
    const now = this.deps.clock();
    const room = await this.deps.rooms.findById(roomId);
    if (!room) throw RoomsErrors.INVITATION_NOT_FOUND();
    if (input.accept) {
      const accepted = await this.accept(principal, room);
      if (!accepted) throw RoomsErrors.INVITATION_NOT_FOUND();
      return must1(await this.present([accepted]));
    }
    const closed = await this.deps.invitations.close(roomId, principal.userId, 'DECLINED', input.reason ?? null, now);
    if (!closed) throw RoomsErrors.INVITATION_NOT_FOUND();
    if (input.block) {
      await this.deps.blocker.blockFor(principal.userId, closed.inviterId, input.reason ?? 'UNKNOWN', now);
    }
    // The moderation area files the report (it reacts on the domain-event bus).
    if (input.report) await this.deps.domainEvents.emit('room.invitation-reported', { roomId, inviteeId: principal.userId, inviterId: closed.inviterId, reason: input.reason ?? 'UNKNOWN' });
    return must1(await this.present([closed]));
  }

  /** Accepts the caller's pending invitation to the room, if there is one: true when there was. */
  async acceptIfPending(principal: Principal, room: RoomDoc): Promise<boolean> {
    return (await this.accept(principal, room)) !== null;
  }

  /** The caller's pending invitation, accepted: a member now, the inviter told; null when none was pending. */
  private async accept(principal: Principal, room: RoomDoc): Promise<RoomInvitationDoc | null> {
    const closed = await this.deps.invitations.close(room._id, principal.userId, 'ACCEPTED', null, this.deps.clock());
    if (!closed) return null;
    await this.deps.membership.join(room, principal.userId);
    const me = await this.deps.users.findById(principal.userId);
    await this.deps.events.toUsers([closed.inviterId], 'room.invitation-accepted', { roomId: room._id, user: { id: principal.userId, displayName: me?.displayName ?? null } });
    return closed;
  }

  /** The inviter, the room's creator or an admin withdraws a pending invitation. */
  async cancel(principal: Principal, roomId: string, inviteeId: string): Promise<void> {
    const room = await this.deps.policy.room(roomId);
    const invitation = await this.deps.invitations.find(roomId, inviteeId);
    if (!invitation || invitation.status !== 'PENDING') throw RoomsErrors.INVITATION_NOT_FOUND();
    if (invitation.inviterId !== principal.userId && !isManager(room, principal.userId)) throw RoomsErrors.ROOM_NOT_ALLOWED();
    await this.deps.invitations.close(roomId, inviteeId, 'CANCELLED', null, this.deps.clock());
  }

  /** After a block: nothing either invited the other to stays pending. */
  async cancelBetween(a: string, b: string): Promise<void> {
    await this.deps.invitations.cancelBetween(a, b, this.deps.clock());
  }

  private async present(invitations: RoomInvitationDoc[]): Promise<RoomInvitationView[]> {
    const rooms = new Map((await this.deps.rooms.findManyByIds([...new Set(invitations.map((i) => i.roomId))])).map((room) => [room._id, room]));
    const userIds = [...new Set(invitations.flatMap((i) => [i.inviterId, i.inviteeId]))];
    const users = new Map((await this.deps.users.findManyByIds(userIds)).map((user) => [user._id, user]));
    const summary = (id: string) => userSummary(this.deps.publicBaseUrl, users.get(id), id);
    return invitations.flatMap((invitation) => {
      const room = rooms.get(invitation.roomId);
      if (!room) return [];
      return [
        {
          room: presentRoom(room),
          inviter: summary(invitation.inviterId),
          invitee: summary(invitation.inviteeId),
          status: invitation.status,
          declineReason: invitation.declineReason,
          createdAt: invitation.createdAt.toISOString(),
          answeredAt: invitation.answeredAt?.toISOString() ?? null,
        },
      ];
    });
  }

  /** Every pending invitation to or from a user cancelled (their account was deleted). */
  cancelAllOf(userId: string): Promise<void> {
    return this.deps.invitations.cancelAllOf(userId, this.deps.clock());
  }
}

/** The rule of `roomInvites`: connections come in at once (but `nobody` lets in only their direct chats); others are asked when the setting is `everyone`. */
function admissionOf(user: UserDoc, connected: boolean, roomType: RoomType): Admission {
  const setting = user.roomInvites ?? 'everyone';
  if (connected && (setting !== 'nobody' || roomType === 'DIRECT')) return 'ADD';
  if (!connected && setting === 'everyone') return 'INVITE';
  throw RoomsErrors.ROOM_INVITES_REFUSED();
}

function must1<T>(items: T[]): T {
  const [first] = items;
  if (first === undefined) throw RoomsErrors.INVITATION_NOT_FOUND();
  return first;
}
