import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import type { DeviceEvents } from '../platform/device-events.js';
import type { AttachmentDoc, AttachmentsRepo } from './attachments.repo.js';
import type { BlobStorage } from '../platform/storage/storage.js';
import { errorMessage } from '../platform/errors.js';

export const THUMBNAIL_SIZE = 320;

/** The file cannot be processed, whatever the retries: it is not a readable image or video. */
export class UnprocessableMediaError extends Error {}

function run(command: string, args: string[], onStdout?: (text: string) => void): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (text: string) => onStdout?.(text));
    child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr = (stderr + text).slice(-4000)));
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve(stderr) : reject(new UnprocessableMediaError(`${command} exited with ${code}: ${stderr.split('\n').filter(Boolean).at(-1) ?? ''}`))));
  });
}

export async function durationSeconds(file: string): Promise<number> {
  let out = '';
  await run('ffprobe', ['-v', 'error', '-show_entries', 'format=duration', '-of', 'default=nw=1:nk=1', file], (text) => (out += text));
  const seconds = Number.parseFloat(out.trim());
  return Number.isFinite(seconds) && seconds > 0 ? seconds : 0;
}

/** The thumbnail the worker makes: WebP, at most 320 px on its longer side, turned upright. */
export async function thumbnail(input: string, output: string): Promise<void> {
  try {
    await sharp(input, { failOn: 'error' })
      .rotate()
      .resize({ width: THUMBNAIL_SIZE, height: THUMBNAIL_SIZE, fit: 'inside', withoutEnlargement: true })
      .webp({ quality: 75 })
      .toFile(output);
  } catch (error) {
    throw new UnprocessableMediaError(`not a readable image: ${errorMessage(error)}`);
  }
}

/** The worker's conversion: H.264/AAC MP4 with the index up front, progress in percent (at most 95). */
export async function convertToMp4(input: string, output: string, durationSeconds: number, onProgress?: (percent: number) => void): Promise<void> {
  await run(
    'ffmpeg',
    ['-nostdin', '-y', '-i', input, '-c:v', 'libx264', '-preset', 'veryfast', '-crf', '23', '-pix_fmt', 'yuv420p', '-vf', 'scale=trunc(iw/2)*2:trunc(ih/2)*2',
      '-c:a', 'aac', '-b:a', '128k', '-movflags', '+faststart', '-progress', 'pipe:1', '-nostats', output],
    (text) => {
      const match = /out_time_us=(\d+)/.exec(text.split('\n').filter((line) => line.startsWith('out_time_us=')).at(-1) ?? '');
      if (!match || durationSeconds === 0) return;
      onProgress?.(Math.min(95, Math.floor((Number(match[1]) / 1e6 / durationSeconds) * 100)));
    },
  );
}

/** The media worker's work on one attachment: thumbnails with sharp, MP4 and a poster with ffmpeg. */
export class MediaService {
  constructor(
    private readonly deps: { attachments: AttachmentsRepo; storage: BlobStorage; events: DeviceEvents },
  ) {}

  private progress(a: AttachmentDoc, percent: number, state: 'PROCESSING' | 'READY' = 'PROCESSING') {
    return this.deps.events.toDevice(a.uploaderDeviceId, 'attachment.progress', { attachmentId: a._id, messageId: a.messageId, roomId: a.roomId, percent, state });
  }

  /** Processes one attachment; a file that cannot be processed ends FAILED (and its uploader is told). */
  async process(attachmentId: string): Promise<'READY' | 'FAILED' | 'SKIPPED'> {
    const attachment = await this.deps.attachments.findById(attachmentId);
    if (!attachment || attachment.status !== 'PROCESSING') return 'SKIPPED';
    const work = await mkdtemp(path.join(os.tmpdir(), 'chat-media-'));
    try {
      const input = path.join(work, `input${path.extname(attachment.storageKey)}`);
      await this.deps.storage.download(attachment.storageKey, input);
      await this.progress(attachment, 0);
      const base = path.posix.dirname(attachment.storageKey);
      const set: Partial<AttachmentDoc> = { status: 'READY' };
      if (attachment.kind === 'IMAGE') {
        const thumb = path.join(work, 'thumb.webp');
        await thumbnail(input, thumb);
        set.thumbnailKey = `${base}/thumbnail.webp`;
        await this.deps.storage.putFile(set.thumbnailKey, thumb, 'image/webp');
      } else if (attachment.kind === 'VIDEO') {
        const duration = await durationSeconds(input);
        const mp4 = path.join(work, 'video.mp4');
        let reported = 0;
        await convertToMp4(input, mp4, duration, (percent) => {
          // A progress event every quarter, not every frame.
          if (percent >= reported + 25) {
            reported = percent - (percent % 25);
            void this.progress(attachment, reported);
          }
        });
        const frame = path.join(work, 'poster.jpg');
        await run('ffmpeg', ['-nostdin', '-y', '-ss', String(Math.min(1, duration / 2)), '-i', mp4, '-frames:v', '1', frame]);
        const poster = path.join(work, 'poster.webp');
        await thumbnail(frame, poster);
        set.convertedKey = `${base}/video.mp4`;
        set.posterKey = `${base}/poster.webp`;
        await this.deps.storage.putFile(set.convertedKey, mp4, 'video/mp4');
        await this.deps.storage.putFile(set.posterKey, poster, 'image/webp');
      }
      const done = await this.deps.attachments.finish(attachment._id, set);
      if (done) await this.progress(done, 100, 'READY');
      return 'READY';
    } catch (error) {
      if (!(error instanceof UnprocessableMediaError)) throw error;
      const failed = await this.deps.attachments.finish(attachment._id, { status: 'FAILED', error: error.message.slice(0, 500) });
      if (failed) {
        await this.deps.events.toDevice(attachment.uploaderDeviceId, 'attachment.failed', {
          attachmentId: attachment._id,
          messageId: attachment.messageId,
          roomId: attachment.roomId,
          reason: attachment.kind === 'VIDEO' ? 'NOT_A_READABLE_VIDEO' : 'NOT_A_READABLE_IMAGE',
        });
      }
      return 'FAILED';
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  }
}
