import fastifyMultipart from '@fastify/multipart';
import { unlink } from 'node:fs/promises';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { RouteOptions } from '../route-options.js';
import { IdParam, NoContentSchema } from '../../src/platform/common.schemas.js';
import { stageCapped, uploadStagingDir } from '../../src/platform/storage/upload-staging.js';
import { AttachmentsErrors } from '../../src/attachments/attachments.errors.js';
import type { StagedPart } from '../../src/e2ee/encrypted-uploads.service.js';
import { assertMultipart } from '../multipart.js';
import { MULTIPART_FORM } from '../openapi.js';
import { BACKUP_CIPHERTEXT_MAX, E2eeAttachmentUploadedSchema, E2eeBackupDtoSchema, E2eeBackupRequestSchema, E2eeIdentitySchema, E2eeKeyRequestSchema, E2eeShareUploadSchema, E2eeSharesDtoSchema } from '../../src/e2ee/e2ee.schemas.js';
import { E2eeErrors } from '../../src/e2ee/e2ee.errors.js';
import { RoomsErrors } from '../../src/rooms/rooms.errors.js';
import { principalOf } from '../auth.js';
import { BODY_ERRORS, MULTIPART_ERRORS, authedErrors } from '../responses.js';

/** The end-to-end encryption key directory (spec, "End-to-end encryption"; docs/clients/e2ee.md). */
export const e2eeRoutes: FastifyPluginAsyncZod<RouteOptions> = async (app, { services, config }) => {
  const { keyDirectory, roomKeys, encryptedUploads } = services;
  const maxBytes = config.E2EE_ATTACHMENT_MAX_BYTES;
  const stagingDir = uploadStagingDir(config);
  await app.register(fastifyMultipart, { limits: { files: 2, fileSize: maxBytes + 1, fields: 0, parts: 2 } });
  const tags = ['End-to-end encryption'];
  const security = [{ bearerAuth: [] }];
  const room = z.object({ roomId: IdParam });
  const roomErrors = [RoomsErrors.ROOM_NOT_FOUND, RoomsErrors.NOT_A_MEMBER, E2eeErrors.ROOM_NOT_E2EE] as const;

  app.put('/api/e2ee/identity', {
    schema: {
      tags,
      security,
      summary: 'Register this device\'s identity keys (once per device)',
      description: 'The devices of every end-to-end encrypted room the user is in get `e2ee.device-added` and `e2ee.rotation-due`. A device with an identity may receive room keys.',
      body: E2eeIdentitySchema,
      response: { 204: NoContentSchema, ...authedErrors(E2eeErrors.IDENTITY_INVALID, E2eeErrors.IDENTITY_PROOF_INVALID, E2eeErrors.IDENTITY_EXISTS, ...BODY_ERRORS) },
    },
    handler: async (request, reply) => {
      await keyDirectory.registerIdentity(principalOf(request), request.body);
      return reply.code(204).send();
    },
  });

  app.get('/api/e2ee/backup', {
    schema: {
      tags,
      security,
      summary: 'The caller\'s key backup, exactly as uploaded (204 when there is none)',
      response: { 200: E2eeBackupDtoSchema, 204: NoContentSchema, ...authedErrors() },
    },
    handler: async (request, reply) => {
      const backup = await keyDirectory.backup(principalOf(request));
      if (!backup) return reply.code(204).send();
      reply.header('etag', `"${backup.etag}"`);
      return backup;
    },
  });

  app.put('/api/e2ee/backup', {
    // The ciphertext may be 16 MiB of base64, with the rest of the JSON around it.
    bodyLimit: BACKUP_CIPHERTEXT_MAX + 64 * 1024,
    schema: {
      tags,
      security,
      summary: 'Store the caller\'s key backup, replacing a lower version (409 names the stored version)',
      body: E2eeBackupRequestSchema,
      response: { 204: NoContentSchema, ...authedErrors(E2eeErrors.BACKUP_INVALID, E2eeErrors.BACKUP_VERSION_CONFLICT, ...BODY_ERRORS) },
    },
    handler: async (request, reply) => {
      await keyDirectory.putBackup(principalOf(request), request.body);
      return reply.code(204).send();
    },
  });

  app.delete('/api/e2ee/backup', {
    schema: { tags, security, summary: 'Delete the caller\'s key backup (also when there is none)', response: { 204: NoContentSchema, ...authedErrors() } },
    handler: async (request, reply) => {
      await keyDirectory.deleteBackup(principalOf(request));
      return reply.code(204).send();
    },
  });

  app.get('/api/e2ee/rooms/:roomId/keys', {
    schema: {
      tags,
      security,
      summary: 'The room\'s current key version and this device\'s wrapped copies of every version, with who produced each',
      params: room,
      response: { 200: E2eeSharesDtoSchema, ...authedErrors(...roomErrors) },
    },
    handler: async (request) => roomKeys.shares(principalOf(request), request.params.roomId),
  });

  app.post('/api/e2ee/rooms/:roomId/keys', {
    bodyLimit: 4 * 1024 * 1024,
    schema: {
      tags,
      security,
      summary: 'Upload wrapped copies of a room key: the next version (create) or copies for devices that lack one',
      description:
        'With `create`, `version` is the current one plus one and the shares cover every eligible device (identity registered, not signed out, an active member\'s); the first upload for a version wins and a later one gets 409. ' +
        'Without, the version exists and each share is for an eligible device that has none for it (all or nothing); open key requests of those devices are answered. Each share is signed by the uploading device.',
      params: room,
      body: E2eeShareUploadSchema,
      response: {
        204: NoContentSchema,
        ...authedErrors(
          ...roomErrors,
          E2eeErrors.DEVICE_MAY_NOT_RECEIVE_KEYS,
          E2eeErrors.KEY_VERSION_INVALID,
          E2eeErrors.KEY_SHARE_INVALID,
          E2eeErrors.KEY_SHARE_RECIPIENT_INVALID,
          E2eeErrors.KEY_SHARES_INCOMPLETE,
          E2eeErrors.KEY_SHARE_EXISTS,
          E2eeErrors.KEY_VERSION_TAKEN,
          E2eeErrors.TOO_MANY_KEY_CALLS,
          ...BODY_ERRORS,
        ),
      },
    },
    handler: async (request, reply) => {
      await roomKeys.upload(principalOf(request), request.params.roomId, request.body);
      return reply.code(204).send();
    },
  });

  app.post('/api/e2ee/rooms/:roomId/keys/request', {
    schema: {
      tags,
      security,
      summary: 'Ask the room\'s other devices for a key version this device lacks',
      description: 'Every other eligible device of every active member gets `e2ee.key-requested` (from its inbox when it connects later); once a share for this device and version is uploaded, the request is answered and no longer delivered. Asking again while a request is open sends nothing more.',
      params: room,
      body: E2eeKeyRequestSchema,
      response: { 204: NoContentSchema, ...authedErrors(...roomErrors, E2eeErrors.DEVICE_MAY_NOT_RECEIVE_KEYS, E2eeErrors.KEY_VERSION_INVALID, E2eeErrors.TOO_MANY_KEY_CALLS, ...BODY_ERRORS) },
    },
    handler: async (request, reply) => {
      await roomKeys.request(principalOf(request), request.params.roomId, request.body.version);
      return reply.code(204).send();
    },
  });

  app.post('/api/e2ee/rooms/:roomId/attachments', {
    schema: {
      tags,
      security,
      summary: 'Store an encrypted attachment (multipart `file`, optional `thumbnail`) for a message of this end-to-end encrypted room',
      description:
        `Active members only. Each part must start like an encrypted blob (the 4 bytes E2A1 and a 12-byte nonce, at least 32 bytes); together at most ${maxBytes} bytes. ` +
        'The answer\'s attachmentId goes into the `attachmentIds` of the uploader\'s next message in this room (each id once); an upload no message takes is deleted after ' +
        `${config.E2EE_UNUSED_UPLOAD_TTL} seconds. Members then open it through the attachment ticket links.`,
      params: room,
      consumes: ['multipart/form-data'],
      [MULTIPART_FORM]: 'EncryptedAttachmentUploadForm',
      response: {
        200: E2eeAttachmentUploadedSchema,
        ...authedErrors(
          ...roomErrors,
          RoomsErrors.PUBLISH_NOT_ALLOWED,
          E2eeErrors.ENCRYPTED_ATTACHMENT_INVALID,
          E2eeErrors.ENCRYPTED_ATTACHMENT_TOO_LARGE,
          E2eeErrors.TOO_MANY_KEY_CALLS,
          AttachmentsErrors.LIMIT_FILE_SIZE,
          ...MULTIPART_ERRORS,
        ),
      },
    },
    handler: async (request) => {
      const principal = principalOf(request);
      await encryptedUploads.assertMayUpload(principal, request.params.roomId);
      assertMultipart(request);
      const parts: { blob: StagedPart | null; thumbnail: StagedPart | null } = { blob: null, thumbnail: null };
      const tooLarge = () => E2eeErrors.ENCRYPTED_ATTACHMENT_TOO_LARGE({ message: `At most ${maxBytes} bytes, thumbnail included` });
      try {
        for await (const part of request.parts()) {
          if (part.type !== 'file') continue;
          const which = part.fieldname === 'file' ? 'blob' : part.fieldname === 'thumbnail' ? 'thumbnail' : null;
          if (!which || parts[which]) {
            part.file.resume();
            throw E2eeErrors.ENCRYPTED_ATTACHMENT_INVALID({ message: 'Send one `file` part and at most one `thumbnail` part' });
          }
          parts[which] = await stageCapped(part.file, stagingDir, maxBytes - (parts.blob?.size ?? 0) - (parts.thumbnail?.size ?? 0), tooLarge);
        }
        return await encryptedUploads.upload(principal, request.params.roomId, parts);
      } finally {
        // Stored parts were moved into storage; whatever is left is dropped.
        await Promise.all([parts.blob, parts.thumbnail].map((part) => part && unlink(part.path).catch(() => undefined)));
      }
    },
  });
};
