import { NOTIFICATION_LEVELS } from './notifications.js';
import { z } from 'zod';
import { ROOM_TYPES } from './rooms.repo.js';
import { IdParam, IsoDateTime, QueryBoolean } from '../platform/common.schemas.js';
import { UserDtoSchema } from '../users/users.schemas.js';
import { BlockReasonSchema } from '../contacts/contacts.schemas.js';

const bool = QueryBoolean;
const nullableBool = z.enum(['true', 'false', 'null']).transform((value) => (value === 'null' ? null : value === 'true'));

export const RoomDtoSchema = z
  .object({
    id: z.string(),
    type: z.enum(ROOM_TYPES),
    name: z.string().nullable(),
    description: z.string().nullable(),
    link: z.string().nullable().describe('Readable link of public groups and broadcast rooms'),
    creatorId: z.string(),
    admins: z.array(z.string()),
    commentsEnabled: z.boolean(),
    reactionsEnabled: z.boolean().describe('Whether members may react to messages (a broadcast room\'s admins may turn it off)'),
    participantPublishEnabled: z.boolean(),
    visible: z.boolean().describe('Broadcast rooms: listed for and joinable by everyone'),
    memberCount: z.number().int(),
    language: z.string().describe('Language of the name and description shown'),
    translatedInto: z.array(z.string()).describe('Other languages the name and description exist in'),
    createdAt: IsoDateTime,
  })
  .meta({ id: 'RoomDto' });

export const RoomTranslationSchema = z
  .object({ name: z.string().max(50).describe('Empty removes this language'), description: z.string().trim().max(250).nullable().default(null) })
  .strict()
  .meta({ id: 'RoomTranslationRequest' });

export const RoomCreateSchema = z
  .object({
    type: z.enum(ROOM_TYPES),
    name: z.string().trim().min(3).max(50).optional().describe('Required except for direct chats'),
    description: z.string().trim().max(250).optional(),
    memberIds: z.array(IdParam).max(1000).optional().describe('A direct chat takes exactly one'),
    visible: z.boolean().optional().describe('Broadcast rooms only; default true'),
  })
  .strict()
  .meta({ id: 'RoomCreateRequest' });

export const RoomUpdateQuerySchema = z.object({
  name: z.string().trim().min(3, 'at least 3 characters').max(50, 'at most 50 characters'),
  description: z.string().trim().max(250, 'at most 250 characters'),
  commentsEnabled: nullableBool.optional(),
  participantPublishEnabled: nullableBool.optional(),
  reactionsEnabled: nullableBool.optional().describe('Broadcast rooms: whether followers may react to posts (default true)'),
});

export const PublishQuerySchema = z.object({ publishEnabled: bool });
export const MutedQuerySchema = z.object({ muted: bool });
export const EnabledQuerySchema = z.object({ enabled: bool });
export const MutedSchema = z.object({ muted: z.boolean() }).meta({ id: 'RoomMuted' });

const Level = z.enum(NOTIFICATION_LEVELS);
export const NotificationsRequestSchema = z
  .object({
    level: Level.describe('ALL: every message; MENTIONS: messages that mention the member, mention the room, or reply to one of theirs; NONE: nothing (calls still ring)'),
    mutedUntil: IsoDateTime.nullish().describe('A mute with an end: NONE until then, then `level` again (a past time, or none: no such mute)'),
  })
  .strict()
  .meta({ id: 'RoomNotificationsRequest' });
export const NotificationsSchema = z
  .object({
    roomId: z.string(),
    level: Level.describe('The level chosen (the room\'s default until the member chooses: ALL for direct chats and groups of up to 256, MENTIONS above, NONE for broadcast rooms)'),
    mutedUntil: IsoDateTime.nullable().describe('While a mute with an end lasts'),
    levelNow: Level.describe('What is in force now: NONE during such a mute, else `level`'),
  })
  .meta({ id: 'RoomNotifications' });

export const RoomSearchSchema = z
  .object({
    query: z.string().trim().max(100).optional().describe('Words the group name starts with; absent: the most popular'),
    pageSize: z.number().int().min(1).max(100).default(20),
    currentPage: z.number().int().min(0).max(100_000).default(0),
  })
  .strict()
  .meta({ id: 'RoomSearchRequest' });

export const RoomInvitationDtoSchema = z
  .object({
    room: RoomDtoSchema,
    inviter: UserDtoSchema,
    invitee: UserDtoSchema,
    status: z.enum(['PENDING', 'ACCEPTED', 'DECLINED', 'CANCELLED']),
    declineReason: BlockReasonSchema.nullable(),
    createdAt: IsoDateTime,
    answeredAt: IsoDateTime.nullable(),
  })
  .meta({ id: 'RoomInvitationDto', description: 'An invitation into a room (for a direct chat: a message request) from someone the invitee is not connected to' });

export const AnswerInvitationQuerySchema = z.object({
  accept: bool.describe('true accepts (the caller becomes a member), false declines'),
  reason: BlockReasonSchema.optional().describe('Why the invitation is declined (and the inviter blocked)'),
  block: bool.default(false).describe('With accept=false: also block the inviter'),
  report: bool.default(false).describe('With accept=false: also report the inviter to the service\'s moderators (the reason is the report\'s)'),
});
