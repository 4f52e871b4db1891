import { createHmac, timingSafeEqual } from 'node:crypto';

/** How long an invocation's follow-up URL answers, and how many answers it takes (as Slack's response_url). */
export const FOLLOW_UP_TTL_MS = 15 * 60_000;
export const FOLLOW_UP_USES = 5;

/** Who a follow-up answers: the app, the invocation, the member who invoked, the room (null: the test console). */
export interface FollowUpTarget {
  appId: string;
  invocationId: string;
  userId: string;
  roomId: string | null;
  /** When the URL stops answering (ms since 1970). */
  expiresAt: number;
}

/**
 * The tokens of follow-up URLs (deferred answers): the target itself, signed with a key of the
 * service's (HMAC-SHA256), so nothing is stored per invocation; the uses are counted only when one is
 * used. A token is `<base64url JSON>.<base64url MAC>`, checked in constant time.
 */
export class FollowUpTokens {
  constructor(private readonly key: Buffer) {}

  make(target: FollowUpTarget): string {
    const body = Buffer.from(JSON.stringify([target.appId, target.invocationId, target.userId, target.roomId, target.expiresAt])).toString('base64url');
    return `${body}.${this.mac(body)}`;
  }

  /** The target a token names, while it is genuine and not expired; else null. */
  read(token: string, nowMs: number): FollowUpTarget | null {
    const [body, mac] = token.split('.');
    if (!body || !mac || token.split('.').length !== 2) return null;
    const expected = Buffer.from(this.mac(body));
    const given = Buffer.from(mac);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
    const [appId, invocationId, userId, roomId, expiresAt] = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as [string, string, string, string | null, number];
    return nowMs < expiresAt ? { appId, invocationId, userId, roomId, expiresAt } : null;
  }

  private mac(body: string): string {
    return createHmac('sha256', this.key).update('follow-up:').update(body).digest('base64url');
  }
}
