import type { DeviceEvents } from '../platform/device-events.js';
import type { Platform } from '../platform/platform.js';
import { narrow } from '../platform/narrow.js';
import type { RoomReads, RoomsPolicy } from '../rooms/index.js';
import type { UserReads } from '../users/index.js';
import { RoomActivityRepo } from './room-activity.repo.js';
import { QUEUES } from '../platform/queues.js';
import { MessageEditsRepo, MessageRemovalsRepo, MessagesRepo } from './messages.repo.js';
import { MessagesPolicy } from './messages.policy.js';
import { MessagesService } from './messages.service.js';
import { MessageChangesService } from './message-changes.service.js';
import { MessageReadingService } from './message-reading.service.js';
import { ReactionsService } from './reactions.service.js';
import type { ClaimUploads, MessagesDeps } from './message-shared.js';

/** Posting and reading messages, comments and translations of broadcast posts. */
export function messagesArea(
  p: Platform,
  deps: {
    rooms: RoomReads;
    roomsPolicy: RoomsPolicy;
    users: UserReads;
    events: DeviceEvents;
    claimUploads: ClaimUploads;
    removeFiles: (messageId: string) => Promise<void>;
    /** Whether a new message of the room may have anyone to push to (the push area's reach). */
    mayNeedPush: (roomId: string, authorId: string) => Promise<boolean>;
  },
) {
  const messagesRepo = new MessagesRepo(p.db);
  const edits = new MessageEditsRepo(p.db);
  const removals = new MessageRemovalsRepo(p.db);
  const activity = new RoomActivityRepo(p.db);
  const policy = new MessagesPolicy({ messages: messagesRepo, rooms: deps.roomsPolicy });
  const parts: MessagesDeps = {
    rooms: deps.roomsPolicy,
    policy,
    messages: messagesRepo,
    activity,
    events: deps.events,
    geo: p.geo,
    users: deps.users,
    supportedLanguages: p.config.SUPPORTED_LANGUAGES,
    claimUploads: deps.claimUploads,
    edits,
    removeFiles: deps.removeFiles,
    windows: { editMs: p.config.MESSAGE_EDIT_WINDOW * 1000, deleteMs: p.config.MESSAGE_DELETE_WINDOW * 1000 },
    // Members who did not get a post live are pushed from one worker job per post.
    enqueuePush: (messageId, replacement) => p.queues.add(QUEUES.messagePush, { messageId, ...(replacement ? { replacement: true } : {}) }),
    enqueueMentionPush: (messageId, mentioned) => p.queues.add(QUEUES.messagePush, { messageId, mentioned }),
    mayNeedPush: deps.mayNeedPush,
    clock: p.clock,
    logger: p.logger,
    removals,
    messageRequests: {
      posts: p.config.MESSAGE_REQUEST_POSTS,
      ephemeral: p.ephemeral,
      slotKey: (roomId, userId) => p.keys.slots('message-request', `${roomId}:${userId}`),
      memberCount: async (roomId) => (await deps.rooms.findById(roomId))?.memberCount ?? 0,
    },
  };
  // Posting, reading (and receipts), changing (edits, deletions) and reactions: one service each, over the same parts.
  const messages = new MessagesService(parts);
  const reading = new MessageReadingService(parts);
  const changes = new MessageChangesService(parts);
  const reactions = new ReactionsService(parts);
  // A new member starts with the room's history read: their unread count counts from their joining.
  p.domainEvents.on('room.member-joined', ({ roomId, userId }) => activity.startMember(roomId, userId, p.clock()));
  /** What a deleted account wrote, erased where it stands (asked for at deletion), and the chat lists' previews of it. */
  const forgetAuthor = async (userId: string) => {
    await messagesRepo.eraseByAuthor(userId, p.clock());
    // Every word of theirs goes, wherever it was kept: the earlier versions of what they edited, and
    // the excerpts other members' replies carry. Each step may run again (a crash midway).
    await edits.removeOfMany(await messagesRepo.idsByAuthor(userId));
    await messagesRepo.forgetRepliesTo(userId);
    await activity.eraseLastBy(userId);
  };
  /** What the user wrote, for their data export (ciphertext stays ciphertext in end-to-end encrypted rooms). */
  const exportOf = async (userId: string) =>
    (await messagesRepo.byAuthor(userId)).map((m) => ({
      id: m._id,
      roomId: m.roomId,
      parentId: m.parentId,
      message: m.message,
      encrypted: m.encrypted,
      language: m.language,
      attachmentIds: m.attachmentIds,
      geoLocation: m.geoLocation,
      createdAt: m.createdAt.toISOString(),
    }));
  /** A deleted account's read marks (with or without its words erased). */
  const forgetReader = (userId: string) => activity.forgetReader(userId);
  return {
    repos: { messages: messagesRepo, messageEdits: edits, roomActivity: activity, messageRemovals: removals },
    messages,
    reading,
    changes,
    reactions,
    policy,
    forgetAuthor,
    forgetReader,
    exportOf,
    /** Writes the read marks that wait (an author's own, lingering): before erasure, and when the process stops. */
    flushReadMarks: () => activity.flush(),
    // What other areas read of messages, each a small interface of its own (never a repository).
    reads: narrow(messagesRepo, ['findById', 'before', 'after']),
    activityReads: narrow(activity, ['activityOf', 'readMarks', 'readMarksOf']),
  };
}
export type MessagesArea = ReturnType<typeof messagesArea>;

// What other areas use of this one (they import only this file).
export type { MessagesPolicy } from './messages.policy.js';

export type { MessagesService } from './messages.service.js';
export type { PostMessageInput, PostRequest } from './message-shared.js';
export type { MessageChangesService } from './message-changes.service.js';
export type { MessageReadingService } from './message-reading.service.js';
export type { ReactionsService } from './reactions.service.js';
export type { LastMessage } from './room-activity.repo.js';
export { unreadCount, unreadMentions } from './room-activity.repo.js';
export { appText, cleanText } from './message-shared.js';

/** What other areas read of messages: one by id, and the room's messages before or after one. */
export type MessageReads = MessagesArea['reads'];
/** What other areas read of rooms' activity: the timeline's last message and counters, and read marks. */
export type ActivityReads = MessagesArea['activityReads'];
