import type { z } from 'zod';
import type { RoomCallReads } from '../calls/index.js';
import type { LastMessage, ActivityReads } from '../messages/index.js';
import { unreadCount, unreadMentions } from '../messages/index.js';
import { page, type Page } from '../platform/paging.js';
import type { Principal } from '../platform/principal.js';
import type { MembershipReads } from '../rooms/index.js';
import type { RoomReads } from '../rooms/index.js';
import { defaultLevelOf, levelNow, presentRoom } from '../rooms/index.js';
import type { LastMessageSchema, RoomStatusSchema } from './chat-status.schemas.js';

export type RoomStatusView = z.infer<typeof RoomStatusSchema>;

/** How much of a plain-text message the chat list carries; the rest is one read away. */
export const PREVIEW_LENGTH = 280;
/** Ciphertext cannot be cut: an encrypted newest message up to this size comes whole, a longer one empty. */
export const ENCRYPTED_PREVIEW_LIMIT = 4096;

function preview(last: LastMessage): z.infer<typeof LastMessageSchema> {
  const limit = last.encrypted ? ENCRYPTED_PREVIEW_LIMIT : PREVIEW_LENGTH;
  const truncated = last.message.length > limit;
  const message = !truncated ? last.message : last.encrypted ? '' : last.message.slice(0, limit);
  return { id: last.id, userId: last.userId, message, truncated, encrypted: last.encrypted, attachmentCount: last.attachmentCount, createdAt: last.createdAt.toISOString() };
}

/**
 * The chat list a phone shows at start-up: every room of the caller, latest activity first, each with
 * its unread count, newest message, muted and enabled state and the call in progress. Every read is
 * by `_id` (no scan of messages or members): the sort reads two small fields of each room, the page
 * reads the rest for its rooms only.
 */
export class ChatStatusService {
  constructor(
    private readonly deps: {
      rooms: RoomReads;
      members: MembershipReads;
      activity: ActivityReads;
      roomCalls: RoomCallReads;
      clock: () => Date;
    },
  ) {}

  async snapshot(principal: Principal, pageSize: number, currentPage: number): Promise<Page<RoomStatusView>> {
    const { rooms, members, activity, roomCalls } = this.deps;
    const roomIds = await members.activeRoomIds(principal.userId);
    // Latest activity first: the newest message, or the room's start (its record is made with its first
    // member). Rooms from before the records were kept have none: their creation time stands in.
    // Where every room fits on one page (most members), the order's read is the page's too.
    const onePage = roomIds.length <= pageSize;
    const recent = await activity.activityOf(roomIds, { full: onePage });
    const created = await rooms.createdAtOf(roomIds.filter((roomId) => !recent.get(roomId)?.lastAt));
    const lastActive = (roomId: string) => (recent.get(roomId)?.lastAt ?? created.get(roomId) ?? new Date(0)).getTime();
    const ordered = [...roomIds].sort((a, b) => lastActive(b) - lastActive(a) || (a < b ? -1 : 1));
    const ids = ordered.slice(currentPage * pageSize, (currentPage + 1) * pageSize);
    const [docs, rows, state, marks, calls] = await Promise.all([
      rooms.findManyByIds(ids),
      members.membershipsOf(principal.userId, ids),
      onePage ? recent : activity.activityOf(ids, { full: true }),
      activity.readMarks(principal.userId, ids),
      roomCalls.activeCallsOf(ids),
    ]);
    const byId = new Map(docs.map((room) => [room._id, room]));
    const now = this.deps.clock();
    const items = ids.flatMap((roomId): RoomStatusView[] => {
      const room = byId.get(roomId);
      if (!room) return [];
      const activityOfRoom = state.get(roomId);
      const member = rows.get(roomId);
      const call = calls.get(roomId);
      const level = member ? levelNow(member, room, now) : defaultLevelOf(room);
      return [
        {
          room: presentRoom(room),
          unreadCount: unreadCount(activityOfRoom, marks.get(roomId), principal.userId),
          unreadMentions: unreadMentions(activityOfRoom, marks.get(roomId), principal.userId),
          lastMessage: activityOfRoom?.last ? preview(activityOfRoom.last) : null,
          muted: member ? level === 'NONE' : false,
          notificationLevel: level,
          enabled: member?.enabled ?? true,
          call: call ? { callId: call._id, media: call.media, participantCount: call.participantCount, startedAt: call.createdAt.toISOString() } : null,
        },
      ];
    });
    return page(items, ordered.length, pageSize, currentPage);
  }
}
