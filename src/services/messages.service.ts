import { ObjectId } from 'mongodb';
import type { Principal } from '../auth/principal.js';
import { badRequest } from '../errors.js';
import type { DeviceEvents } from '../events.js';
import type { GeoLocator } from '../geo/geoip.js';
import type { BlocksRepo } from '../repos/blocks.repo.js';
import type { GeoLocation, MessageDoc, MessagesRepo } from '../repos/messages.repo.js';
import type { RoomMembersRepo } from '../repos/room-members.repo.js';
import type { RoomsRepo } from '../repos/rooms.repo.js';
import { isManager } from './rooms.service.js';

export interface MessageView {
  id: string;
  roomId: string;
  userId: string;
  message: string;
  encrypted: boolean;
  geoLocation: GeoLocation | null;
  attachmentIds: string[];
  createdAt: string;
}

export interface PostMessageInput {
  roomId: string;
  message: string;
  geoLocation?: GeoLocation | null;
  attachmentIds?: string[];
}

export const MAX_MESSAGE_LENGTH = 10_000;
/** An encrypted message is base64 (or base64url) of at least a 12-byte nonce and a 16-byte tag. */
const ENCRYPTED = /^[A-Za-z0-9+/_-]{38,}={0,2}$/;

export function presentMessage(message: MessageDoc): MessageView {
  return {
    id: message._id,
    roomId: message.roomId,
    userId: message.userId,
    message: message.message,
    encrypted: message.encrypted,
    geoLocation: message.geoLocation,
    attachmentIds: message.attachmentIds,
    createdAt: message.createdAt.toISOString(),
  };
}

/**
 * Text as it is stored and shown: Unicode NFC, no control characters but newline and tab, no
 * trailing spaces on lines, at most two blank lines in a row, trimmed.
 */
export function cleanText(text: string): string {
  return text
    .normalize('NFC')
    .replace(/\r\n?/g, '\n')
    // eslint-disable-next-line no-control-regex -- removing control characters is the point here
    .replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u200b\u2028\u2029\ufeff]/g, '')
    .replace(/[ \t]+\n/g, '\n')
    .replace(/\n{4,}/g, '\n\n\n')
    .trim();
}

/** Posting and reading room messages (spec, "Messages", rule 1). */
export class MessagesService {
  constructor(
    private readonly deps: {
      rooms: RoomsRepo;
      members: RoomMembersRepo;
      messages: MessagesRepo;
      blocks: BlocksRepo;
      events: DeviceEvents;
      geo: GeoLocator;
      clock?: () => Date;
    },
  ) {}

  /**
   * Rule 1: an enabled member; in a broadcast room, or where participants may not publish, only the
   * creator or an admin (or a participant the publish switch allowed); the body's roomId equals the
   * path; an end-to-end encrypted room takes only an encrypted message. A block ends a direct chat.
   */
  async post(principal: Principal, roomId: string, input: PostMessageInput, request: { ip: string } = { ip: '' }): Promise<MessageView> {
    if (input.roomId !== roomId) throw badRequest('ROOM_ID_MISMATCH', 'The body\'s roomId must equal the path\'s');
    const room = await this.deps.rooms.findById(roomId);
    if (!room) throw badRequest('ROOM_NOT_FOUND', 'No such room');
    const member = await this.deps.members.find(roomId, principal.userId);
    if (!member?.active || !member.enabled) throw badRequest('NOT_A_MEMBER', 'You are not an enabled member of this room');
    const manager = isManager(room, principal.userId);
    const mayPublish = manager || (room.type !== 'BROADCAST' && (member.publishEnabled ?? room.participantPublishEnabled));
    if (!mayPublish) throw badRequest('PUBLISH_NOT_ALLOWED', 'Only the creator or an admin may post here');
    if (room.type === 'DIRECT') {
      const other = room.uniqueKey.split(':').find((id) => id !== principal.userId);
      if (other && (await this.deps.blocks.eitherBlocked(principal.userId, other))) throw badRequest('BLOCKED', 'A block ends this direct chat');
    }
    if ((input.attachmentIds ?? []).length > 0) throw badRequest('ATTACHMENT_NOT_FOUND', 'No such attachment');

    let text: string;
    const encrypted = room.type === 'E2EE';
    if (encrypted) {
      if (!ENCRYPTED.test(input.message)) throw badRequest('MESSAGE_NOT_ENCRYPTED', 'This room takes only end-to-end encrypted messages');
      text = input.message;
    } else {
      text = cleanText(input.message);
      if (text.length === 0) throw badRequest('MESSAGE_EMPTY', 'The message is empty');
    }
    if (text.length > MAX_MESSAGE_LENGTH) throw badRequest('MESSAGE_TOO_LONG', `At most ${MAX_MESSAGE_LENGTH} characters`);

    const now = this.deps.clock?.() ?? new Date();
    const doc: MessageDoc = {
      _id: new ObjectId().toHexString(),
      roomId,
      userId: principal.userId,
      message: text,
      encrypted,
      // Derived from the request's address when the client sent none (spec, ChatMessage); never in E2EE rooms.
      geoLocation: input.geoLocation ?? (encrypted ? null : this.deps.geo.locate(request.ip)),
      attachmentIds: [],
      createdAt: now,
    };
    await this.deps.messages.insert(doc);
    const view = presentMessage(doc);
    // Live path: one broadcast to the room's socket.io room on every node; devices catch up by reading.
    this.deps.events.toRoom(roomId, 'message.new', { ...view, messageId: view.id });
    return view;
  }

  /**
   * A page of a room's messages, newest first. `before` pages back in history; `after` returns the
   * messages right after a cursor (to catch up after being offline), continuing with the newest id.
   */
  async read(principal: Principal, roomId: string, input: { before?: string; after?: string; limit: number }): Promise<{ items: MessageView[]; hasMore: boolean }> {
    const room = await this.deps.rooms.findById(roomId);
    if (!room) throw badRequest('ROOM_NOT_FOUND', 'No such room');
    const member = await this.deps.members.find(roomId, principal.userId);
    const open = room.type === 'PUBLIC_GROUP' || (room.type === 'BROADCAST' && room.visible);
    if (!member?.active && !open) throw badRequest('ROOM_NOT_FOUND', 'No such room, or not one you may read');
    if (input.before && input.after) throw badRequest('CURSOR_CONFLICT', 'Give before or after, not both');
    const rows = input.after
      ? (await this.deps.messages.after(roomId, input.after, input.limit + 1)).reverse()
      : await this.deps.messages.before(roomId, input.before ?? null, input.limit + 1);
    const hasMore = rows.length > input.limit;
    const items = input.after ? rows.slice(rows.length - Math.min(rows.length, input.limit)) : rows.slice(0, input.limit);
    return { items: items.map(presentMessage), hasMore };
  }
}
