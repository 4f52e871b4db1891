import { z } from 'zod';
import { IdParam, IsoDateTime, queryInt } from '../platform/common.schemas.js';
import { CardSchema } from '../platform/cards.schemas.js';

export const GeoLocationSchema = z
  .object({
    latitude: z.number().min(-90).max(90),
    longitude: z.number().min(-180).max(180),
    country: z.string().max(64).nullable().optional(),
    city: z.string().max(128).nullable().optional(),
  })
  .meta({ id: 'GeoLocation' });

export const ChatMessageSchema = z
  .object({
    userId: z.string().nullish().describe('Ignored: the caller is the author'),
    roomId: IdParam.describe('Must equal the path room id'),
    message: z.string().max(200_000).describe('Text; in an end-to-end encrypted room, base64 of the ciphertext'),
    geoLocation: GeoLocationSchema.nullable().optional(),
    attachmentIds: z.array(IdParam).max(10).nullish(),
    clientMessageId: z
      .string()
      .min(8)
      .max(64)
      .regex(/^[A-Za-z0-9_.:-]+$/, 'letters, digits and _ . : -')
      .nullish()
      .describe('Made by the phone when the user taps send (a UUID): posting again with it returns the first message\'s id instead of a second message; unique per author and room'),
    replyToId: IdParam.nullish().describe('A message of the same room the author may read: this one answers it'),
    mentions: z
      .array(IdParam)
      .max(50)
      .nullish()
      .describe('Members the message mentions, by user id (at most 50): those who are not members are left out, never an error. In an end-to-end encrypted room the ids travel in clear beside the ciphertext (the server must know whom to notify)'),
    mentionsRoom: z.boolean().nullish().describe('Mentions everyone in the room: the room\'s creator and admins only (400 MENTION_ROOM_NOT_ALLOWED)'),
  })
  .meta({ id: 'ChatMessage' });

export const ReplyExcerptSchema = z
  .object({
    id: z.string().describe('The message replied to'),
    userId: z.string(),
    excerpt: z.string().nullable().describe('Up to 100 characters of its text (TEXT); null for the other kinds'),
    kind: z.enum(['TEXT', 'ENCRYPTED', 'DELETED', 'ATTACHMENTS', 'CARD']).describe('ENCRYPTED: an end-to-end encrypted message (ids only); DELETED: deleted since; ATTACHMENTS: files only; CARD: an app\'s card'),
  })
  .meta({ id: 'ReplyExcerpt' });

export const MessageDtoSchema = z
  .object({
    id: z.string(),
    roomId: z.string(),
    userId: z.string(),
    message: z.string(),
    encrypted: z.boolean(),
    geoLocation: GeoLocationSchema.nullable(),
    attachmentIds: z.array(z.string()),
    parentId: z.string().nullable().describe('The message this one comments on'),
    language: z.string().describe('Language the post was written in'),
    appId: z.string().nullable().describe('Set when an app posted the message (its userId is then app:<appId>)'),
    card: CardSchema.nullable().describe('The card an app posted'),
    replyTo: ReplyExcerptSchema.nullable().describe('The message this one answers, as it stands now'),
    mentions: z.array(z.string()).describe('The members it mentions, by user id'),
    mentionsRoom: z.boolean().describe('It mentions everyone in the room'),
    reactions: z.array(z.object({ emoji: z.string(), count: z.number().int(), me: z.boolean().describe('The caller is among them') })).describe('Most first'),
    editedAt: IsoDateTime.nullable().describe('When its author last edited it (earlier versions: GET /api/messages/{messageId}/edits)'),
    deleted: z.boolean().describe('Deleted for everyone: a tombstone (no text, translations, card or attachments)'),
    createdAt: IsoDateTime,
  })
  .meta({ id: 'MessageDto' });

export const EditMessageSchema = z
  .object({
    message: z.string().max(200_000).describe('The new text; in an end-to-end encrypted room, base64 of the ciphertext'),
    mentions: z.array(IdParam).max(50).nullish().describe('The members the new text mentions (replacing the earlier list; absent: unchanged): those it newly mentions are pushed the mention once'),
  })
  .strict()
  .meta({ id: 'EditMessageRequest' });

export const MessageEditsSchema = z
  .object({
    messageId: z.string(),
    versions: z.array(z.object({ message: z.string(), since: IsoDateTime, replacedAt: IsoDateTime.nullable().describe('Null for the current version') })).describe('Oldest first; the last is the current text'),
  })
  .meta({ id: 'MessageEdits' });

export const ReactionParamsSchema = z.object({ messageId: IdParam, emoji: z.string().min(1).max(32).regex(/^[^\s/]+$/, 'one emoji').describe('One emoji (a single grapheme)') });

export const DeleteMessageQuerySchema = z.object({
  scope: z.enum(['everyone', 'me']).default('everyone').describe('everyone: a tombstone for every member; me: hidden for the caller only'),
});

export const CommentSchema = z.object({ message: z.string().max(200_000) }).strict().meta({ id: 'CommentRequest' });

export const PostTranslationsSchema = z
  .object({
    messageId: z.string(),
    originalLanguage: z.string(),
    translations: z.record(z.string(), z.string()).describe('Every language version, the original included'),
  })
  .meta({ id: 'PostTranslations' });

const Cursor = z.string().regex(/^[0-9a-f]{24}$/, 'not a message id');

export const MessagesQuerySchema = z.object({
  before: Cursor.optional().describe('Older than this message'),
  after: Cursor.optional().describe('Newer than this message (catching up); continue with the newest id returned'),
  limit: queryInt(1, 100, 50),
});

export const MessagesPageSchema = z.object({ items: z.array(MessageDtoSchema), hasMore: z.boolean() }).meta({ id: 'MessagesPage' });

export const TldrRequestedSchema = z
  .object({ requestId: z.string(), messageId: z.string(), status: z.literal('QUEUED') })
  .meta({ id: 'TldrRequestedDto' });

export const MessageReadersSchema = z
  .object({
    messageId: z.string(),
    readers: z.array(z.object({ userId: z.string(), readAt: IsoDateTime.nullable().describe('When their read mark last moved forward') })).describe('Members who read it (with read receipts on)'),
  })
  .meta({ id: 'MessageReaders' });
