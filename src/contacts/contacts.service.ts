import type { Clock } from '../platform/clock.js';
import type { z } from 'zod';
import { randomUUID } from 'node:crypto';
import type { Principal } from '../platform/principal.js';
import { normalizePhone } from '../platform/phone.js';
import { isDuplicateKey } from '../platform/mongo.js';
import type { EmailProvider } from '../platform/email/email.js';
import type { DeviceEvents } from '../platform/device-events.js';
import type { EphemeralStore } from '../platform/ephemeral.js';
import type { BlockReason, BlocksRepo } from './blocks.repo.js';
import type { BlocksService } from './blocks.service.js';
import { pairKey, type ConnectionRequestDoc, type ConnectionRequestsRepo } from './connection-requests.repo.js';
import type { ConnectionsRepo } from './connections.repo.js';
import type { UserDoc, UserReads } from '../users/index.js';
import type { SmsProvider } from '../platform/sms/sms.js';
import { page, type Page } from '../platform/paging.js';
import type { InvitationJob } from '../platform/queues.js';
import { userSummary, type UserSummaryView } from '../users/index.js';
import { CommonErrors } from '../platform/common.errors.js';
import { ContactsErrors } from './contacts.errors.js';
import type { ConnectionRequestDtoSchema } from './contacts.schemas.js';
import type { ConnectionDtoSchema } from './contacts.schemas.js';

/** As the ConnectionRequestDto record of the OpenAPI document. */
export type ConnectionRequestView = z.infer<typeof ConnectionRequestDtoSchema>;

/** As the ConnectionDto record of the OpenAPI document. */
export type ConnectionView = z.infer<typeof ConnectionDtoSchema>;

export interface SendRequestInput {
  email?: string;
  phone?: string;
  recipientId?: string;
  customMessage: string;
}

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/** The longest sender's name an invitation carries. */
const INVITATION_NAME_MAX = 30;

/**
 * The one text an invitation says, whoever sends it: the sender's display name, cleaned of links,
 * web addresses and anything like a phone number and cut short, or "A contact"; never the sender's
 * number, and never words of theirs (the request's custom message is shown in the app once the
 * invitee has signed up). So an invitation cannot be made to carry a message to a stranger.
 */
export function invitationText(displayName: string | null | undefined, appName: string, via: 'number' | 'address'): { subject: string; text: string } {
  const cleaned = (displayName ?? '')
    .replace(/[a-z][a-z0-9+.-]*:\/\/\S*/gi, ' ')
    .replace(/\bwww\.\S*/gi, ' ')
    .replace(/\S+\.(?:[a-z]{2,24})(?:\/\S*)?\b/gi, ' ')
    .replace(/\+?\d(?:[\s().-]*\d){4,}/g, ' ')
    .replace(/[<>"'`\\{}[\]|]/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
  const who = [...cleaned].slice(0, INVITATION_NAME_MAX).join('').trim() || 'A contact';
  const subject = `${who} invites you to ${appName}`;
  return { subject, text: via === 'number' ? `${subject}. Sign in with this number to answer.` : `${subject}. Sign in and confirm this address in your profile to answer.` };
}

/** Connection requests and connections (spec, "Contacts and blocks", rules 1 to 3). */
/** How long one sender holds an invitation it is sending before another may try. */
const INVITATION_LEASE_MS = 60_000;

export class ContactsService {
  constructor(
    private readonly deps: {
      users: UserReads;
      requests: ConnectionRequestsRepo;
      connections: ConnectionsRepo;
      blocks: BlocksRepo;
      /** Blocks with everything a block entails (pending requests and room invitations cancelled). */
      blocker: Pick<BlocksService, 'blockFor'>;
      events: DeviceEvents;
      sms: SmsProvider;
      email: EmailProvider;
      /** Queues the job that retries an invitation's sending. */
      enqueueInvitation: (job: InvitationJob) => Promise<void>;
      appName: string;
      /** Where the pictures' public addresses start. */
      publicBaseUrl: string;
      clock: Clock;
      /** Requests by phone or e-mail per member: per hour and per day (CONTACT_INVITES_PER_HOUR, _PER_DAY). */
      limits: { perHour: number; perDay: number; ephemeral: EphemeralStore; key: (userId: string, window: 'hour' | 'day') => string };
    },
  ) {}

  /**
   * A request by phone or e-mail looks an address up, and may text or mail someone: bounded per
   * member per hour and per day, counted alike whether or not the address has an account (so the
   * limit tells nothing about it). 429 TOO_MANY_CONTACT_INVITES with Retry-After past either.
   */
  private async assertMayInvite(userId: string): Promise<void> {
    const { perHour, perDay, ephemeral, key } = this.deps.limits;
    for (const [window, limit, seconds] of [['hour', perHour, 3_600], ['day', perDay, 86_400]] as const) {
      const hit = await ephemeral.hit(key(userId, window), limit, seconds);
      if (!hit.allowed) throw ContactsErrors.TOO_MANY_CONTACT_INVITES({ message: `At most ${limit} requests by phone number or e-mail address per ${window}`, retryAfter: hit.retryAfter });
    }
  }

  private now(): Date {
    return this.deps.clock();
  }

  /** Rule 2: to an existing user (told in the app, pushed when offline), or an invitation by SMS or e-mail. */
  async sendRequest(principal: Principal, input: SendRequestInput): Promise<void> {
    const { users, requests, connections, blocks } = this.deps;
    if (!input.email && !input.phone && !input.recipientId) throw ContactsErrors.RECIPIENT_REQUIRED();
    const email = input.email?.trim().toLowerCase();
    if (email !== undefined && (!EMAIL.test(email) || email.length > 254)) throw ContactsErrors.EMAIL_INVALID();
    const phone = input.phone === undefined ? undefined : normalizePhone(input.phone);
    if (phone === null) throw CommonErrors.PHONE_INVALID({ message: 'Expected a valid phone number in international format' });
    if (!input.recipientId) await this.assertMayInvite(principal.userId);

    let recipient: UserDoc | null = null;
    if (input.recipientId) {
      recipient = await users.findById(input.recipientId);
      // The spec's one 401 outside authentication: an unknown recipientId.
      if (!recipient || recipient.deletedAt) throw ContactsErrors.RECIPIENT_UNKNOWN();
    } else if (phone) recipient = await users.findByPhone(phone);
    else if (email) recipient = await users.findByEmail(email);

    const now = this.now();
    const sender = await users.findById(principal.userId);
    if (!sender) throw CommonErrors.UNAUTHORIZED();
    const request: ConnectionRequestDoc = {
      _id: randomUUID(),
      senderId: principal.userId,
      recipientId: recipient?._id ?? null,
      recipientPhone: recipient ? null : (phone ?? null),
      recipientEmail: recipient || phone ? null : (email ?? null),
      customMessage: input.customMessage,
      status: 'PENDING',
      declineReason: null,
      pendingKey: '',
      createdAt: now,
      answeredAt: null,
    };

    if (recipient) {
      if (recipient._id === principal.userId) throw ContactsErrors.REQUEST_TO_SELF();
      if (await blocks.eitherBlocked(principal.userId, recipient._id)) throw ContactsErrors.BLOCKED({ message: 'A block between you and this user prevents requests' });
      if (await connections.find(principal.userId, recipient._id)) throw ContactsErrors.ALREADY_CONNECTED();
      request.pendingKey = pairKey(principal.userId, recipient._id);
    } else {
      if (phone && phone === sender.phone) throw ContactsErrors.REQUEST_TO_SELF();
      request.pendingKey = pairKey(principal.userId, phone ? `phone:${phone}` : `email:${email}`);
      request.invitation = { state: 'QUEUED', leaseUntil: null, attempts: 0, sentAt: null };
    }
    try {
      // The unique pending key makes "one pending request per pair" hold under races too.
      await requests.insert(request);
    } catch (error) {
      if (!isDuplicateKey(error)) throw error;
      // Asking again for an invitation already on its way is a retry: it goes on being sent.
      const existing = await requests.findPending(request.pendingKey);
      if (!recipient && existing?.invitation && existing.senderId === principal.userId) return this.sendInvitation(existing);
      throw ContactsErrors.REQUEST_EXISTS();
    }

    if (recipient) {
      await this.deps.events.toUsers([recipient._id], 'contact.request', { requestId: request._id, sender: userSummary(this.deps.publicBaseUrl, sender, sender._id), customMessage: request.customMessage });
      return;
    }
    await this.sendInvitation(request);
  }

  /**
   * An invitation is an outbox record: a job that retries its sending is queued first (so a crash
   * loses nothing), then it is sent at once when the provider answers. The caller hears 204 either
   * way; a provider that is down only delays it.
   */
  private async sendInvitation(request: ConnectionRequestDoc): Promise<void> {
    if (request.invitation?.state === 'SENT') return;
    await this.deps.enqueueInvitation({ requestId: request._id, round: this.now().getTime() });
    await this.deliverInvitation(request._id).catch(() => undefined);
  }

  /**
   * Sends one invitation by SMS or e-mail, once: the worker's job and the request itself both come
   * here, and a lease on the record lets one of them send at a time. Throws when the provider fails
   * or another sender holds it, so the job tries again later. At least once: a sender that dies
   * after the provider took the message but before recording it may send it a second time.
   */
  async deliverInvitation(requestId: string): Promise<'SENT' | 'NOT_NEEDED'> {
    const { requests } = this.deps;
    const current = await requests.findById(requestId);
    if (!current?.invitation || current.invitation.state === 'SENT' || current.status !== 'PENDING' || current.recipientId !== null) return 'NOT_NEEDED';
    const claimed = await requests.claimInvitation(requestId, this.now(), INVITATION_LEASE_MS);
    if (!claimed) throw new Error('the invitation is being sent by another process');
    try {
      const sender = await this.deps.users.findById(claimed.senderId);
      const { subject, text } = invitationText(sender?.displayName, this.deps.appName, claimed.recipientPhone ? 'number' : 'address');
      if (claimed.recipientPhone) await this.deps.sms.send({ to: claimed.recipientPhone, text, purpose: 'invitation' });
      else if (claimed.recipientEmail) await this.deps.email.send({ to: claimed.recipientEmail, subject, text });
    } catch (error) {
      await requests.releaseInvitation(requestId);
      throw error;
    }
    await requests.markInvitationSent(requestId, this.now());
    return 'SENT';
  }

  /** Requests sent to and by the caller, newest first, answered or not. */
  async listRequests(principal: Principal, pageSize: number, currentPage: number): Promise<Page<ConnectionRequestView>> {
    const { items, total } = await this.deps.requests.pageForUser(principal.userId, currentPage * pageSize, pageSize);
    const ids = [...new Set(items.flatMap((r) => [r.senderId, ...(r.recipientId ? [r.recipientId] : [])]))];
    const users = new Map((await this.deps.users.findManyByIds(ids)).map((u) => [u._id, u]));
    const view = (id: string): UserSummaryView => userSummary(this.deps.publicBaseUrl, users.get(id), id);
    return page(
      items.map((r) => ({
        id: r._id,
        direction: r.recipientId === principal.userId ? 'INCOMING' : 'OUTGOING',
        sender: view(r.senderId),
        recipient: r.recipientId ? view(r.recipientId) : null,
        invitedPhone: r.recipientPhone,
        invitedEmail: r.recipientEmail,
        customMessage: r.customMessage,
        status: r.status,
        declineReason: r.declineReason,
        createdAt: r.createdAt.toISOString(),
        answeredAt: r.answeredAt?.toISOString() ?? null,
      })),
      total,
      pageSize,
      currentPage,
    );
  }

  /** Rule 3: accept connects the two; decline may carry a reason, and with `block` also blocks the sender. */
  async answer(principal: Principal, requestId: string, input: { accept: boolean; reason?: BlockReason; block: boolean }): Promise<UserSummaryView> {
    const { requests, connections, users, events } = this.deps;
    const request = await requests.findById(requestId);
    if (!request || request.recipientId !== principal.userId) throw ContactsErrors.REQUEST_NOT_FOUND();
    if (input.accept && input.block) throw ContactsErrors.ACCEPT_WITH_BLOCK();
    const now = this.now();
    const answered = await requests.answer(requestId, principal.userId, input.accept ? 'ACCEPTED' : 'DECLINED', input.accept ? null : (input.reason ?? null), now);
    if (!answered) throw ContactsErrors.REQUEST_ALREADY_ANSWERED();
    if (input.accept) {
      await connections.connect(request.senderId, principal.userId, now);
      const me = await users.findById(principal.userId);
      await events.toUsers([request.senderId], 'contact.accepted', { requestId, user: userSummary(this.deps.publicBaseUrl, me, principal.userId) });
    } else if (input.block) {
      await this.deps.blocker.blockFor(principal.userId, request.senderId, input.reason ?? 'UNKNOWN', now);
    }
    const sender = await users.findById(request.senderId);
    return userSummary(this.deps.publicBaseUrl, sender, request.senderId);
  }

  async listConnections(principal: Principal, pageSize: number, currentPage: number): Promise<Page<ConnectionView>> {
    const { items, total } = await this.deps.connections.pageForUser(principal.userId, currentPage * pageSize, pageSize);
    const otherOf = (pair: [string, string]) => (pair[0] === principal.userId ? pair[1] : pair[0]);
    const users = new Map((await this.deps.users.findManyByIds(items.map((c) => otherOf(c.userIds)))).map((u) => [u._id, u]));
    return page(
      items.map((c) => {
        const other = otherOf(c.userIds);
        return {
          user: userSummary(this.deps.publicBaseUrl, users.get(other), other),
          since: c.createdAt.toISOString(),
          disableIncomingCalls: c.incomingCallsDisabledBy.includes(principal.userId),
        };
      }),
      total,
      pageSize,
      currentPage,
    );
  }

  async removeConnection(principal: Principal, userId: string): Promise<void> {
    if (!(await this.deps.connections.remove(principal.userId, userId))) throw ContactsErrors.NOT_CONNECTED();
  }

  /** Rule 1: the call setting exists only between connected users. */
  async incomingCallsDisabled(principal: Principal, targetUserId: string): Promise<{ disableIncomingCalls: boolean }> {
    const connection = await this.deps.connections.find(principal.userId, targetUserId);
    if (!connection || targetUserId === principal.userId) throw ContactsErrors.NOT_CONNECTED();
    return { disableIncomingCalls: connection.incomingCallsDisabledBy.includes(principal.userId) };
  }

  async setIncomingCallsDisabled(principal: Principal, targetUserId: string, disabled: boolean): Promise<{ disableIncomingCalls: boolean }> {
    if (targetUserId === principal.userId) throw ContactsErrors.NOT_CONNECTED();
    const updated = await this.deps.connections.setIncomingCallsDisabled(principal.userId, targetUserId, disabled);
    if (!updated) throw ContactsErrors.NOT_CONNECTED();
    return { disableIncomingCalls: updated.incomingCallsDisabledBy.includes(principal.userId) };
  }

  /** A new account takes over the invitations sent to its number, and hears of each. */
  async claimInvites(userId: string): Promise<void> {
    const user = await this.deps.users.findById(userId);
    if (!user) return;
    const claimed: ConnectionRequestDoc[] = [];
    // Only a confirmed address claims what was sent to it.
    for (const invite of await this.deps.requests.openInvites({ phone: user.phone, email: user.emailConfirmedAt ? user.email : undefined })) {
      if (invite.senderId === user._id) continue;
      try {
        const addressed = await this.deps.requests.addressInvite(invite._id, invite.senderId, user._id);
        if (addressed) claimed.push(addressed);
      } catch (error) {
        // The pair already has a pending request: that one stands and this invitation lapses.
        if (!isDuplicateKey(error)) throw error;
        await this.deps.requests.cancelInvite(invite._id);
      }
    }
    for (const request of claimed) {
      const sender = await this.deps.users.findById(request.senderId);
      if (!sender) continue;
      await this.deps.events.toUsers([user._id], 'contact.request', { requestId: request._id, sender: userSummary(this.deps.publicBaseUrl, sender, sender._id), customMessage: request.customMessage });
    }
  }

  /** Which of `others` are connected with the user. */
  connectedAmong(userId: string, others: string[]): Promise<Set<string>> {
    return this.deps.connections.connectedAmong(userId, others);
  }
}
