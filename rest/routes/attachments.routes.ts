import { mkdir, unlink } from 'node:fs/promises';
import fastifyMultipart from '@fastify/multipart';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { RouteOptions } from '../route-options.js';
import { MAX_FILES_PER_UPLOAD, SIZE_LIMITS, stageFile, type StagedFile } from '../../src/attachments/attachment-limits.js';
import { uploadStagingDir } from '../../src/platform/storage/upload-staging.js';
import type { PostMessageInput } from '../../src/messages/index.js';
import { IdParam, NoContentSchema } from '../../src/platform/common.schemas.js';
import { pagedSchema, pagingQuery } from '../../src/platform/common.schemas.js';
import { ChatMessageSchema } from '../../src/messages/messages.schemas.js';
import { AttachmentDtoSchema, MediaTicketSchema } from '../../src/attachments/attachments.schemas.js';
import { afterAnswerOf } from '../after-answer.js';
import { principalOf } from '../auth.js';
import { assertMultipart } from '../multipart.js';
import { MULTIPART_FORM } from '../openapi.js';
import { MULTIPART_ERRORS, authedErrors } from '../responses.js';
import { AttachmentsErrors } from '../../src/attachments/attachments.errors.js';
import { ContactsErrors } from '../../src/contacts/contacts.errors.js';
import { MessagesErrors } from '../../src/messages/messages.errors.js';
import { RoomsErrors } from '../../src/rooms/rooms.errors.js';

export const attachmentsRoutes: FastifyPluginAsyncZod<RouteOptions> = async (app, { services, config }) => {
  const { attachments } = services;
  const tags = ['Messages'];
  const security = [{ bearerAuth: [] }];
  const stagingDir = uploadStagingDir(config);
  await mkdir(stagingDir, { recursive: true });
  await app.register(fastifyMultipart, { limits: { files: MAX_FILES_PER_UPLOAD, fileSize: SIZE_LIMITS.VIDEO + 1, fields: 4, fieldSize: 256 * 1024, parts: 20 } });

  app.post('/api/messages/:roomId/attachments', {
    schema: {
      tags,
      security,
      summary: 'Upload files (multipart: `file` parts and an optional `payload` ChatMessage as JSON)',
      description:
        'At most 10 files; by extension, images up to 25 MB, audio 50 MB, video 250 MB, others 100 MB (1 MB = 1,048,576 bytes): each violation is a 400 naming the limit, before anything is posted or stored. The payload message is posted first and the files attach to it (without a payload, a message with no text). Images get a thumbnail and videos an MP4 and a poster in the background; the uploader\'s devices get `attachment.progress` and `attachment.failed`. 400 in end-to-end encrypted rooms; 429 when 20 of the caller\'s files are in processing or the processing queue is full.',
      consumes: ['multipart/form-data'],
      [MULTIPART_FORM]: 'AttachmentsUploadForm',
      params: z.object({ roomId: IdParam }),
      response: { 204: NoContentSchema, ...authedErrors(RoomsErrors.ROOM_NOT_FOUND, RoomsErrors.NOT_A_MEMBER, RoomsErrors.PUBLISH_NOT_ALLOWED, ContactsErrors.BLOCKED, AttachmentsErrors.E2EE_USE_ENCRYPTED_UPLOAD, AttachmentsErrors.NO_FILES, AttachmentsErrors.PAYLOAD_INVALID, MessagesErrors.ROOM_ID_MISMATCH, MessagesErrors.ATTACHMENT_NOT_FOUND, MessagesErrors.MESSAGE_TOO_LONG, MessagesErrors.REPLY_TO_NOT_FOUND, RoomsErrors.MENTION_ROOM_NOT_ALLOWED, AttachmentsErrors.LIMIT_FILE_SIZE, AttachmentsErrors.LIMIT_FILE_SIZE_IMAGE, AttachmentsErrors.LIMIT_FILE_SIZE_VIDEO, AttachmentsErrors.LIMIT_FILE_SIZE_AUDIO, AttachmentsErrors.LIMIT_FILE_SIZE_OTHER, ...MULTIPART_ERRORS, AttachmentsErrors.LIMIT_FILES_IN_PROCESSING, AttachmentsErrors.MEDIA_QUEUE_FULL) },
    },
    handler: async (request, reply) => {
      const principal = principalOf(request);
      const room = await attachments.assertMayUpload(principal, request.params.roomId);
      assertMultipart(request);
      const staged: StagedFile[] = [];
      let payload: PostMessageInput | undefined;
      try {
        for await (const part of request.parts()) {
          if (part.type === 'file') {
            staged.push(await stageFile(part.file, part.filename || 'file', stagingDir));
          } else if (part.fieldname === 'payload') {
            // Sent as text, the part is JSON to parse; sent as application/json (as the document
            // declares it), the multipart parser has parsed it already.
            let json: unknown = part.value;
            if (typeof part.value === 'string') {
              try {
                json = JSON.parse(part.value);
              } catch {
                throw AttachmentsErrors.PAYLOAD_INVALID();
              }
            }
            const parsed = ChatMessageSchema.safeParse(json);
            if (!parsed.success) throw AttachmentsErrors.PAYLOAD_INVALID({ message: parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`).join('; ') });
            payload = parsed.data;
          }
        }
      } catch (error) {
        await Promise.all(staged.map((file) => unlink(file.path).catch(() => undefined)));
        throw error;
      }
      await attachments.commit(principal, room, staged, payload, { ip: request.ip, afterAnswer: afterAnswerOf(reply) });
      return reply.code(204).send();
    },
  });

  app.post('/api/messages/:messageId/attachments/:attachmentId/ticket', {
    config: { revealsSecret: true },
    schema: {
      tags,
      security,
      summary: 'A short-lived link that opens one attachment without the Authorization header',
      description: `The link works for ${config.TICKET_TTL} seconds, opens this attachment only (add ?variant=thumbnail, poster or mp4 for its derived files), supports HTTP ranges, and is not an access token.`,
      params: z.object({ messageId: IdParam, attachmentId: IdParam }),
      response: { 200: MediaTicketSchema, ...authedErrors(MessagesErrors.ATTACHMENT_NOT_FOUND, RoomsErrors.ROOM_NOT_FOUND) },
    },
    handler: async (request) => attachments.ticket(principalOf(request), request.params.messageId, request.params.attachmentId),
  });

  app.get('/api/messages/:roomId/attachments', {
    schema: {
      tags,
      security,
      summary: 'The room\'s attachments, newest first',
      params: z.object({ roomId: IdParam }),
      querystring: pagingQuery(10, 100),
      response: { 200: pagedSchema(AttachmentDtoSchema, 'PagedModelAttachmentDto'), ...authedErrors(RoomsErrors.ROOM_NOT_FOUND) },
    },
    handler: async (request) => attachments.list(principalOf(request), request.params.roomId, request.query.pageSize, request.query.currentPage),
  });
};
