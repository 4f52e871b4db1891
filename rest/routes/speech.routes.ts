import { mkdir, rm, stat } from 'node:fs/promises';
import fastifyMultipart from '@fastify/multipart';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AppContext } from '../../src/context.js';
import { AppError, badRequest, withBody } from '../../src/platform/errors.js';
import { SIZE_LIMITS, stageFile, uploadStagingDir } from '../../src/attachments/attachment-limits.js';
import { UnreadableAudioError } from '../../src/speech/transcriber.js';
import { principalOf } from '../auth.js';
import { authedErrors } from '../responses.js';

const SpeechToTextSchema = z.object({ text: z.string().describe('The transcript') }).meta({ id: 'SpeachToTextResponse' });

const failure = (code: 'EMPTY_FILE' | 'NO_TRANSCRIPT' | 'UNREADABLE_AUDIO', message: string) => withBody(badRequest(code, message), { error: code });

/** Spec, "Messages", rule 3: a recorded voice file converted and transcribed on the server. */
export const speechRoutes: FastifyPluginAsyncZod<{ ctx: AppContext }> = async (app, { ctx }) => {
  const stagingDir = uploadStagingDir(ctx.config);
  await mkdir(stagingDir, { recursive: true });
  await app.register(fastifyMultipart, { limits: { files: 1, fileSize: SIZE_LIMITS.AUDIO + 1, fields: 2, parts: 3 } });

  app.post('/api/speech-to-text', {
    schema: {
      tags: ['Messages'],
      security: [{ bearerAuth: [] }],
      summary: 'Transcribe a recorded voice message (multipart `file`, audio up to 50 MB)',
      description: 'English speech, recognized on the server (ffmpeg, then pocketsphinx). 400 with `error` EMPTY_FILE, NO_TRANSCRIPT or UNREADABLE_AUDIO.',
      consumes: ['multipart/form-data'],
      response: { 200: SpeechToTextSchema, ...authedErrors(413, 415) },
    },
    handler: async (request) => {
      principalOf(request);
      if (!request.isMultipart()) throw new AppError(415, 'UNSUPPORTED_MEDIA_TYPE', 'Send multipart/form-data');
      const part = await request.file();
      if (!part) throw failure('EMPTY_FILE', 'No file was sent');
      const staged = await stageFile(part.file, part.filename || 'voice', part.mimetype, stagingDir);
      try {
        if ((await stat(staged.path)).size === 0) throw failure('EMPTY_FILE', 'The file is empty');
        let text: string;
        try {
          text = await ctx.transcriber.transcribe(staged.path);
        } catch (error) {
          if (error instanceof UnreadableAudioError) throw failure('UNREADABLE_AUDIO', 'The file is not readable audio');
          throw error;
        }
        if (text.length === 0) throw failure('NO_TRANSCRIPT', 'No speech was recognized');
        return { text };
      } finally {
        await rm(staged.path, { force: true });
      }
    },
  });
};
