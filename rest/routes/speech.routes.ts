import { mkdir, rm } from 'node:fs/promises';
import fastifyMultipart from '@fastify/multipart';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { SIZE_LIMITS, stageFile } from '../../src/attachments/attachment-limits.js';
import { uploadStagingDir } from '../../src/platform/storage/upload-staging.js';
import type { RouteOptions } from '../route-options.js';
import { principalOf } from '../auth.js';
import { assertMultipart, onlyFile } from '../multipart.js';
import { MULTIPART_FORM } from '../openapi.js';
import { MULTIPART_ERRORS, authedErrors } from '../responses.js';
import { AttachmentsErrors } from '../../src/attachments/attachments.errors.js';
import { SpeechErrors } from '../../src/speech/speech.errors.js';

const SpeechToTextSchema = z.object({ text: z.string().describe('The transcript') }).meta({ id: 'SpeachToTextResponse' });

/** Spec, "Messages", rule 3: the upload is staged here; the speech service checks and transcribes it. */
export const speechRoutes: FastifyPluginAsyncZod<RouteOptions> = async (app, { services, config }) => {
  const stagingDir = uploadStagingDir(config);
  await mkdir(stagingDir, { recursive: true });
  await app.register(fastifyMultipart, { limits: { files: 1, fileSize: SIZE_LIMITS.AUDIO + 1, fields: 2, parts: 3 } });

  app.post('/api/speech-to-text', {
    schema: {
      tags: ['Messages'],
      security: [{ bearerAuth: [] }],
      summary: 'Transcribe a recorded voice message (multipart `file`, audio up to 50 MB)',
      description: 'English speech, recognized on the server (ffmpeg, then pocketsphinx). 400 with `error` EMPTY_FILE, NO_TRANSCRIPT or UNREADABLE_AUDIO.',
      consumes: ['multipart/form-data'],
      [MULTIPART_FORM]: 'AudioUploadForm',
      response: { 200: SpeechToTextSchema, ...authedErrors(SpeechErrors.EMPTY_FILE, SpeechErrors.NO_TRANSCRIPT, SpeechErrors.UNREADABLE_AUDIO, AttachmentsErrors.LIMIT_FILE_SIZE, AttachmentsErrors.LIMIT_FILE_SIZE_AUDIO, ...MULTIPART_ERRORS) },
    },
    handler: async (request) => {
      const principal = principalOf(request);
      assertMultipart(request);
      const staged = await onlyFile(request, (part) => stageFile(part.file, part.filename || 'voice', stagingDir));
      try {
        return await services.speech.transcribe(principal, staged);
      } finally {
        if (staged) await rm(staged.path, { force: true });
      }
    },
  });
};
