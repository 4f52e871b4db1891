import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import sharp from 'sharp';
import type { Workers } from '../../workers/main.js';
import { bearer, signIn, startTestApp, startTestWorkers, type Session, type TestApp } from '../helpers/app.js';
import { makeRoom } from '../helpers/factories.js';
import { DeviceClient, spawnHub, type HubProcess } from '../helpers/hubs.js';
import { multipart, type FilePart } from '../helpers/multipart.js';

const exec = promisify(execFile);

async function storedFile(t: TestApp, key: string): Promise<string> {
  const target = path.join(os.tmpdir(), `check-${path.basename(key)}-${Date.now()}`);
  await t.ctx.platform.storage.download(key, target);
  return target;
}

describe('media worker: real images and videos through sharp and ffmpeg', () => {
  let t: TestApp;
  let workers: Workers;
  let hub: HubProcess;
  let owner: Session;
  let phone: DeviceClient;
  let roomId: string;

  before(async () => {
    t = await startTestApp();
    workers = await startTestWorkers(t);
    hub = await spawnHub(t.config);
    owner = await signIn(t);
    roomId = (await makeRoom(t, owner)).id;
    phone = new DeviceClient(owner.accessToken);
    await phone.connect(hub.port);
  });
  after(async () => {
    phone.close();
    await hub.kill();
    await workers.close();
    await t.close();
  });

  async function upload(file: FilePart) {
    const body = multipart([file]);
    const res = await t.app.inject({ method: 'POST', url: `/api/messages/${roomId}/attachments`, headers: { ...bearer(owner.accessToken), ...body.headers }, payload: body.payload });
    assert.equal(res.statusCode, 204, res.body);
    const list = (await t.app.inject({ url: `/api/messages/${roomId}/attachments?pageSize=1`, headers: bearer(owner.accessToken) })).json();
    return list.items[0].id as string;
  }

  it('an image gets a WebP thumbnail of at most 320 px, and the uploader hears progress', async () => {
    const image = await sharp({ create: { width: 1200, height: 800, channels: 3, background: '#2a9d8f' } }).jpeg().toBuffer();
    const id = await upload({ filename: 'photo.jpg', content: image, contentType: 'image/jpeg' });
    await phone.until((r) => r.some((e) => e.event === 'attachment.progress' && e.data.attachmentId === id && e.data.state === 'READY'), 20_000);
    const progress = phone.received.filter((e) => e.event === 'attachment.progress' && e.data.attachmentId === id).map((e) => e.data.percent);
    assert.deepEqual(progress, [0, 100]);
    const doc = await t.ctx.repos.attachments.findById(id);
    assert.equal(doc?.status, 'READY');
    const meta = await sharp(await storedFile(t, doc!.thumbnailKey!)).metadata();
    assert.deepEqual([meta.format, meta.width, meta.height], ['webp', 320, 213]);
  });

  it('a video becomes an H.264/AAC MP4 with a poster frame', async () => {
    const source = path.join(os.tmpdir(), `clip-${Date.now()}.avi`);
    await exec('ffmpeg', ['-nostdin', '-y', '-f', 'lavfi', '-i', 'testsrc=duration=3:size=320x240:rate=25', '-f', 'lavfi', '-i', 'sine=frequency=440:duration=3', '-c:v', 'mpeg4', '-c:a', 'libmp3lame', source]);
    const id = await upload({ filename: 'clip.avi', content: await readFile(source), contentType: 'video/x-msvideo' });
    await phone.until((r) => r.some((e) => e.event === 'attachment.progress' && e.data.attachmentId === id && e.data.state === 'READY'), 60_000);
    const doc = await t.ctx.repos.attachments.findById(id);
    assert.equal(doc?.status, 'READY');
    const { stdout } = await exec('ffprobe', ['-v', 'error', '-show_entries', 'stream=codec_type,codec_name', '-of', 'csv=p=0', await storedFile(t, doc!.convertedKey!)]);
    assert.deepEqual(stdout.trim().split('\n').sort(), ['aac,audio', 'h264,video']);
    const poster = await sharp(await storedFile(t, doc!.posterKey!)).metadata();
    assert.deepEqual([poster.format, poster.width, poster.height], ['webp', 320, 240]);
    const percents = phone.received.filter((e) => e.event === 'attachment.progress' && e.data.attachmentId === id).map((e) => e.data.percent as number);
    assert.equal(percents[0], 0);
    assert.equal(percents.at(-1), 100);
    assert.deepEqual(percents, [...percents].sort((a, b) => a - b), 'progress only moves forward');
  });

  it('a file that is not a readable image fails, and the uploader is told', async () => {
    const id = await upload({ filename: 'broken.png', content: Buffer.from('this is not a png at all'), contentType: 'image/png' });
    await phone.until((r) => r.some((e) => e.event === 'attachment.failed' && e.data.attachmentId === id), 20_000);
    const failed = phone.received.find((e) => e.event === 'attachment.failed' && e.data.attachmentId === id)!;
    assert.deepEqual(failed.data, { attachmentId: id, messageId: failed.data.messageId, roomId, reason: 'NOT_A_READABLE_IMAGE' });
    assert.equal((await t.ctx.repos.attachments.findById(id))?.status, 'FAILED');
  });
});
