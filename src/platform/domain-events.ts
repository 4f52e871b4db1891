import type { Logger } from './logger.js';

/**
 * What one area tells the others happened, by name, with its payload. Areas react through
 * `DomainEvents.on` in their own factory; the composition root holds no reactions.
 */
export interface DomainEventMap {
  /** A device was signed out, revoked, or lost its session to a reused refresh token. */
  'device.revoked': { deviceId: string; userId: string };
  /** A session started on a new device (after the SMS code and, when on, two-factor). */
  'user.signed-in': { userId: string; phone: string; deviceId: string };
  /** A user confirmed an e-mail address: invitations sent to it become requests to them. */
  'user.email-confirmed': { userId: string; email: string };
  /** A user became an active member of a room (created it, joined, was added). */
  'room.member-joined': { roomId: string; userId: string };
  /** A member's own settings in a room changed (muted, enabled): who a post is pushed to may have changed. */
  'room.member-changed': { roomId: string; userId: string };
  /** A device was given a push token (a new one, or again): posts of its user's rooms may now be pushed to it. */
  'device.push-token-set': { deviceId: string; userId: string };
  /** A member left a room or was removed from it. */
  'room.member-left': { roomId: string; userId: string; byAdmin: boolean };
  /** One user blocked another: what was pending between them (room invitations) is cancelled. */
  'user.blocked': { blockerId: string; blockedId: string };
  /** An invitee declined a room invitation and reported the inviter in the same step. */
  'room.invitation-reported': { roomId: string; inviteeId: string; inviterId: string; reason: string };
}

export type DomainEventName = keyof DomainEventMap;
type Handler<K extends DomainEventName> = (payload: DomainEventMap[K]) => Promise<void> | void;
type Handlers = { [K in DomainEventName]: Handler<K>[] };

/**
 * A typed in-process bus for reactions across areas. `emit` resolves once every handler ran, in the
 * order they were registered; a handler that fails is logged and does not stop the others, nor
 * undo what already happened.
 */
export class DomainEvents {
  private readonly handlers: Handlers = { 'device.revoked': [], 'user.signed-in': [], 'user.email-confirmed': [], 'room.member-joined': [], 'room.member-changed': [], 'device.push-token-set': [], 'room.member-left': [], 'user.blocked': [], 'room.invitation-reported': [] };

  constructor(private readonly logger: Logger) {}

  on<K extends DomainEventName>(event: K, handler: Handler<K>): void {
    this.handlers[event].push(handler);
  }

  async emit<K extends DomainEventName>(event: K, payload: DomainEventMap[K]): Promise<void> {
    const handlers: Handler<K>[] = this.handlers[event];
    for (const handler of handlers) {
      try {
        await handler(payload);
      } catch (error) {
        this.logger.warn({ err: error, event }, 'a reaction to a domain event failed');
      }
    }
  }
}
