import { randomUUID } from 'node:crypto';
import { open } from 'node:fs/promises';
import type { AttachmentDoc, EncryptedUploadStore } from '../attachments/index.js';
import type { Clock } from '../platform/clock.js';
import type { Logger } from '../platform/logger.js';
import type { Principal } from '../platform/principal.js';
import type { BlobStorage } from '../platform/storage/storage.js';
import { E2eeErrors } from './e2ee.errors.js';
import type { RoomsPolicy } from '../rooms/index.js';

/** An encrypted blob starts with these 4 bytes and a 12-byte nonce (AES-256-GCM, the tag at the end). */
export const ENCRYPTED_MAGIC = Buffer.from('E2A1');
export const ENCRYPTED_MIN_BYTES = 32;

/** A part of the upload, staged on local disk by the route. */
export interface StagedPart {
  path: string;
  size: number;
}

async function startsLikeEncrypted(part: StagedPart): Promise<boolean> {
  if (part.size < ENCRYPTED_MIN_BYTES) return false;
  const file = await open(part.path, 'r');
  try {
    const head = Buffer.alloc(ENCRYPTED_MAGIC.length);
    await file.read(head, 0, head.length, 0);
    return head.equals(ENCRYPTED_MAGIC);
  } finally {
    await file.close();
  }
}

/**
 * Attachments of end-to-end encrypted rooms, which the server cannot read: it checks who uploads
 * (a member who may post in that room, as for any attachment), the size and the header, and stores them as attachments of no
 * message yet. A message of that room by the uploader then claims them (each once); uploads no
 * message claimed are deleted by the clean-up after `unusedTtlMs`. Members fetch them through the
 * same ticket links as any attachment.
 */
export class EncryptedUploadsService {
  constructor(
    private readonly deps: {
      attachments: EncryptedUploadStore;
      rooms: Pick<RoomsPolicy, 'mayPost'>;
      storage: () => BlobStorage;
      /** Counts one encrypted upload of the device; throws 429 past its budget. */
      countUpload: (deviceId: string) => Promise<void>;
      maxBytes: number;
      unusedTtlMs: number;
      clock: Clock;
      logger: Logger;
    },
  ) {}

  /** The checks that come before the body is read: the budget, then the room. */
  async assertMayUpload(principal: Principal, roomId: string): Promise<void> {
    await this.deps.countUpload(principal.deviceId);
    const room = await this.deps.rooms.mayPost(principal, roomId);
    if (room.type !== 'E2EE') throw E2eeErrors.ROOM_NOT_E2EE();
  }

  async upload(principal: Principal, roomId: string, parts: { blob: StagedPart | null; thumbnail: StagedPart | null }): Promise<{ attachmentId: string; size: number }> {
    const { blob, thumbnail } = parts;
    if (!blob) throw E2eeErrors.ENCRYPTED_ATTACHMENT_INVALID({ message: 'Send the encrypted attachment as the `file` part' });
    const size = blob.size + (thumbnail?.size ?? 0);
    if (size > this.deps.maxBytes) throw E2eeErrors.ENCRYPTED_ATTACHMENT_TOO_LARGE({ message: `At most ${this.deps.maxBytes} bytes, thumbnail included` });
    if (!(await startsLikeEncrypted(blob))) throw E2eeErrors.ENCRYPTED_ATTACHMENT_INVALID();
    if (thumbnail && !(await startsLikeEncrypted(thumbnail))) throw E2eeErrors.ENCRYPTED_ATTACHMENT_INVALID({ message: 'The thumbnail is not encrypted: it must start with E2A1 and a 12-byte nonce and be at least 32 bytes' });

    const id = randomUUID();
    const doc: AttachmentDoc = {
      _id: id,
      roomId,
      messageId: '',
      uploaderId: principal.userId,
      uploaderDeviceId: principal.deviceId,
      filename: 'encrypted.bin',
      contentType: 'application/octet-stream',
      kind: 'OTHER',
      size,
      status: 'READY',
      storageKey: `e2ee/${roomId}/${id}`,
      thumbnailKey: thumbnail ? `e2ee/${roomId}/${id}.thumbnail` : null,
      convertedKey: null,
      posterKey: null,
      error: null,
      encrypted: true,
      createdAt: this.deps.clock(),
    };
    const storage = this.deps.storage();
    await storage.putFile(doc.storageKey, blob.path, doc.contentType);
    if (thumbnail && doc.thumbnailKey) await storage.putFile(doc.thumbnailKey, thumbnail.path, doc.contentType);
    await this.deps.attachments.insertEncrypted(doc);
    return { attachmentId: id, size };
  }

  /** Deletes uploads that no message took within the configured time; how many. */
  async deleteUnused(now: Date): Promise<number> {
    const { attachments } = this.deps;
    const cutoff = new Date(now.getTime() - this.deps.unusedTtlMs);
    let deleted = 0;
    for (const doc of await attachments.unusedEncryptedBefore(cutoff, 500)) {
      // The record goes first, conditionally: a message that takes it meanwhile keeps it.
      if (!(await attachments.deleteIfUnused(doc._id))) continue;
      const storage = this.deps.storage();
      for (const key of [doc.storageKey, doc.thumbnailKey]) if (key) await storage.delete(key).catch((error: unknown) => this.deps.logger.warn({ err: error, key }, 'an unused encrypted upload stayed in storage'));
      deleted++;
    }
    return deleted;
  }
}
