import type { RoomDoc } from './rooms.repo.js';
import type { RoomMemberDoc } from './room-members.repo.js';

/** How loud a room is for one member: every message, only those that mention them, or nothing. */
export const NOTIFICATION_LEVELS = ['ALL', 'MENTIONS', 'NONE'] as const;
export type NotificationLevel = (typeof NOTIFICATION_LEVELS)[number];

/** Groups larger than this are quiet by default (MENTIONS); direct chats and smaller groups push everything. */
export const LOUD_GROUP_MAX_MEMBERS = 256;

/** A room's level for a member who never chose one: ALL for direct chats and groups of up to 256, MENTIONS above, NONE for broadcast rooms. */
export function defaultLevel(room: Pick<RoomDoc, 'type' | 'memberCount'>): NotificationLevel {
  if (room.type === 'BROADCAST') return 'NONE';
  return room.type === 'DIRECT' || room.memberCount <= LOUD_GROUP_MAX_MEMBERS ? 'ALL' : 'MENTIONS';
}

/** The member's chosen level, or the room's default (a muted member's is NONE). */
export function chosenLevel(member: Pick<RoomMemberDoc, 'muted' | 'level'>, room: Pick<RoomDoc, 'type' | 'memberCount'>): NotificationLevel {
  if (member.muted) return 'NONE';
  return member.level ?? defaultLevel(room);
}

/** The level in force now: NONE while a mute with an end lasts, then the chosen level again. */
export function levelNow(member: Pick<RoomMemberDoc, 'muted' | 'level' | 'mutedUntil'>, room: Pick<RoomDoc, 'type' | 'memberCount'>, now: Date): NotificationLevel {
  if (member.mutedUntil && member.mutedUntil.getTime() > now.getTime()) return 'NONE';
  return chosenLevel(member, room);
}

/** What a message says about whom it is for: mentioned by id, the whole room, or a reply to someone's message. */
export interface Addressing {
  mentions?: string[] | undefined;
  mentionsRoom?: boolean | undefined;
  /** The author of the message this one replies to. */
  repliesTo?: string | undefined;
}

/** Whether the message addresses this member (mentions them, the room, or replies to them). */
export function addresses(message: Addressing, userId: string): boolean {
  return message.mentionsRoom === true || (message.mentions ?? []).includes(userId) || message.repliesTo === userId;
}

/** Whether a member at `level` is pushed a message: ALL every one, MENTIONS those that address them, NONE none. */
export function pushedAt(level: NotificationLevel, message: Addressing, userId: string): boolean {
  return level === 'ALL' || (level === 'MENTIONS' && addresses(message, userId));
}
