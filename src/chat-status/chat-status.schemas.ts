import { z } from 'zod';
import { IsoDateTime } from '../platform/common.schemas.js';
import { RoomDtoSchema } from '../rooms/rooms.schemas.js';

export const LastMessageSchema = z
  .object({
    id: z.string(),
    userId: z.string(),
    message: z.string().describe('The start of the text (ciphertext in end-to-end encrypted rooms, whole or empty)'),
    truncated: z.boolean().describe('The text was cut: read the message for all of it'),
    encrypted: z.boolean(),
    attachmentCount: z.number().int(),
    createdAt: IsoDateTime,
  })
  .meta({ id: 'LastMessagePreview' });

export const RoomCallSummarySchema = z
  .object({
    callId: z.string(),
    media: z.enum(['AUDIO', 'VIDEO']),
    participantCount: z.number().int(),
    startedAt: IsoDateTime,
  })
  .meta({ id: 'RoomCallSummary' });

export const RoomStatusSchema = z
  .object({
    room: RoomDtoSchema,
    unreadCount: z.number().int().describe('Timeline messages after the caller\'s read mark (comments are not counted)'),
    unreadMentions: z.number().int().describe('Of those, the ones that mention the caller, mention the room, or reply to the caller (the newest 50 such messages of the room are counted)'),
    lastMessage: LastMessageSchema.nullable().describe('The newest timeline message; null before the first'),
    muted: z.boolean().describe('The room is NONE for the caller now (muted, for good or until a time)'),
    notificationLevel: z.enum(['ALL', 'MENTIONS', 'NONE']).describe('How loud the room is for the caller now (GET /api/rooms/{roomId}/notifications: the level chosen and a mute with an end)'),
    enabled: z.boolean().describe('False when an admin disabled the caller in this room'),
    call: RoomCallSummarySchema.nullable().describe('The room call in progress, if any'),
  })
  .meta({ id: 'RoomStatus' });

export const MarkReadSchema = z
  .object({ messageId: z.string().regex(/^[0-9a-f]{24}$/, 'not a message id').optional().describe('Read up to and including this message; absent: up to the newest') })
  .strict()
  .meta({ id: 'MarkReadRequest' });
