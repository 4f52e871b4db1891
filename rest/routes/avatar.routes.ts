import fastifyMultipart from '@fastify/multipart';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { RouteOptions } from '../route-options.js';
import { principalOf } from '../auth.js';
import { assertMultipart, onlyFile } from '../multipart.js';
import { MULTIPART_FORM } from '../openapi.js';
import { MULTIPART_ERRORS, authedErrors } from '../responses.js';
import { NoContentSchema } from '../../src/platform/common.schemas.js';
import { AVATAR_MAX_PIXELS, AVATAR_VERSION } from '../../src/users/avatars.service.js';
import { UserSchema } from '../../src/users/users.schemas.js';
import { UsersErrors } from '../../src/users/users.errors.js';

/** The caller's profile picture: upload or replace, remove. */
export const avatarRoutes: FastifyPluginAsyncZod<RouteOptions> = async (app, { services, config }) => {
  const { users, avatars } = services;
  const tags = ['Users'];
  const security = [{ bearerAuth: [] }];
  await app.register(fastifyMultipart, { limits: { files: 1, fileSize: config.AVATAR_MAX_BYTES, fields: 0, parts: 2 } });

  app.put('/api/users/me/avatar', {
    schema: {
      tags,
      security,
      summary: 'Upload or replace the caller\'s profile picture (multipart `file`)',
      description:
        `A JPEG, PNG, WebP, GIF, HEIF, AVIF or TIFF picture of at most ${config.AVATAR_MAX_BYTES} bytes and ${AVATAR_MAX_PIXELS / 1_000_000} megapixels, turned upright, cropped square to its middle ` +
        'and stored as 512 and 128 pixel WebP without its metadata (no camera location is kept). The answer carries `avatarUrl` and `avatarThumbnailUrl`: ' +
        'addresses that open the picture without the Authorization header, in an image tag, while it is current, and nothing else. A replaced picture\'s addresses stop working.',
      consumes: ['multipart/form-data'],
      [MULTIPART_FORM]: 'AvatarUploadForm',
      response: {
        200: UserSchema,
        ...authedErrors(
          UsersErrors.AVATAR_MISSING,
          UsersErrors.AVATAR_NOT_AN_IMAGE,
          UsersErrors.AVATAR_TOO_MANY_PIXELS,
          UsersErrors.AVATAR_TOO_LARGE,
          ...MULTIPART_ERRORS,
        ),
      },
    },
    handler: async (request) => {
      const principal = principalOf(request);
      assertMultipart(request);
      const upload = await onlyFile(request, (part) =>
        part.toBuffer().catch((error: { code?: string }) => {
          if (error.code === 'FST_REQ_FILE_TOO_LARGE') throw UsersErrors.AVATAR_TOO_LARGE({ message: `The picture is larger than ${config.AVATAR_MAX_BYTES} bytes` });
          throw error;
        }),
      );
      return users.present(await avatars.set(principal, upload));
    },
  });

  app.delete('/api/users/me/avatar', {
    schema: { tags, security, summary: 'Remove the caller\'s profile picture (its addresses stop working)', response: { 204: NoContentSchema, ...authedErrors() } },
    handler: async (request, reply) => {
      await avatars.remove(principalOf(request));
      return reply.code(204).send();
    },
  });
};

/**
 * Profile pictures by their public address: no Authorization header. The address names the user and
 * the picture's random version; it opens that picture while it is the user's current one, and nothing else.
 */
export const avatarFileRoutes: FastifyPluginAsyncZod<RouteOptions> = async (app, { services }) => {
  app.get('/avatars/:userId/:version/:file', {
    schema: {
      hide: true,
      params: z.object({ userId: z.string().min(1).max(64), version: z.string().regex(AVATAR_VERSION), file: z.enum(['512.webp', '128.webp']) }),
    },
    handler: async (request, reply) => {
      const { userId, version, file } = request.params;
      const body = await services.avatars.open(userId, version, file === '512.webp' ? 512 : 128);
      return reply
        .header('content-type', 'image/webp')
        // The address changes with every new picture: what is behind one never changes.
        .header('cache-control', 'public, max-age=31536000, immutable')
        .header('x-content-type-options', 'nosniff')
        .header('content-security-policy', "default-src 'none'; sandbox")
        .header('cross-origin-resource-policy', 'cross-origin')
        .send(body);
    },
  });
};
