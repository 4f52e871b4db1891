import type { Collection, Db } from 'mongodb';
import type { AttachmentKind } from './attachment-limits.js';

export type AttachmentStatus = 'PROCESSING' | 'READY' | 'FAILED';

export interface AttachmentDoc {
  _id: string;
  roomId: string;
  messageId: string;
  uploaderId: string;
  uploaderDeviceId: string;
  filename: string;
  contentType: string;
  kind: AttachmentKind;
  size: number;
  status: AttachmentStatus;
  storageKey: string;
  thumbnailKey: string | null;
  /** Videos: the MP4 (H.264/AAC) made from the upload, and its poster frame. */
  convertedKey: string | null;
  posterKey: string | null;
  error: string | null;
  /**
   * An end-to-end encrypted room's upload (src/e2ee): stored as sent, never processed; `messageId` is
   * empty until a message of its uploader takes it.
   */
  encrypted?: boolean;
  createdAt: Date;
}

export class AttachmentsRepo {
  readonly collection: Collection<AttachmentDoc>;

  constructor(db: Db) {
    this.collection = db.collection<AttachmentDoc>('attachments');
  }

  async ensureIndexes(): Promise<void> {
    await this.collection.createIndexes([
      { key: { roomId: 1, createdAt: -1 }, name: 'room_attachments' },
      { key: { uploaderId: 1, status: 1 }, name: 'uploader_status' },
    ]);
  }

  async insertMany(docs: AttachmentDoc[]): Promise<void> {
    if (docs.length > 0) await this.collection.insertMany(docs);
  }

  findById(id: string): Promise<AttachmentDoc | null> {
    return this.collection.findOne({ _id: id });
  }

  countProcessing(uploaderId: string): Promise<number> {
    return this.collection.countDocuments({ uploaderId, status: 'PROCESSING' });
  }

  /** A room's attachments, newest first: those of messages (an encrypted upload no message took yet is left out). */
  async pageOfRoom(roomId: string, skip: number, limit: number): Promise<{ items: AttachmentDoc[]; total: number }> {
    const filter = { roomId, messageId: { $ne: '' } };
    const [items, total] = await Promise.all([this.collection.find(filter).sort({ createdAt: -1, _id: -1 }).skip(skip).limit(limit).toArray(), this.collection.countDocuments(filter)]);
    return { items, total };
  }

  /** Finishes processing; only a PROCESSING attachment changes, so a retried job cannot flip a result. */
  finish(id: string, set: Partial<AttachmentDoc>): Promise<AttachmentDoc | null> {
    return this.collection.findOneAndUpdate({ _id: id, status: 'PROCESSING' }, { $set: set }, { returnDocument: 'after' });
  }
}
