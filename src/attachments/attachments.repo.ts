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
  private readonly collection: Collection<AttachmentDoc>;

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

  // Encrypted uploads (the e2ee area's): stored as they came, taken once by a message of their uploader.

  async insertEncrypted(doc: AttachmentDoc): Promise<void> {
    await this.collection.insertOne(doc);
  }

  /** A message takes an encrypted upload of its author to its room not used yet; false when there is none such. */
  async claimEncrypted(attachmentId: string, claim: { roomId: string; uploaderId: string; messageId: string }): Promise<boolean> {
    const claimed = await this.collection.updateOne({ _id: attachmentId, roomId: claim.roomId, uploaderId: claim.uploaderId, encrypted: true, messageId: '' }, { $set: { messageId: claim.messageId } });
    return claimed.modifiedCount === 1;
  }

  /** Gives back uploads a message had taken (its claim failed part way). */
  async releaseEncrypted(attachmentIds: string[], messageId: string): Promise<void> {
    await this.collection.updateMany({ _id: { $in: attachmentIds }, messageId }, { $set: { messageId: '' } });
  }

  /** Encrypted uploads no message took, made before `before`; at most `limit`. */
  unusedEncryptedBefore(before: Date, limit: number): Promise<AttachmentDoc[]> {
    return this.collection.find({ encrypted: true, messageId: '', createdAt: { $lt: before } }).limit(limit).toArray();
  }

  /** Deletes an upload's record unless a message took it meanwhile; true when this call did. */
  async deleteIfUnused(attachmentId: string): Promise<boolean> {
    return (await this.collection.deleteOne({ _id: attachmentId, messageId: '' })).deletedCount === 1;
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

  /** The attachments a user uploaded, for erasing them. */
  ofUploader(uploaderId: string): Promise<AttachmentDoc[]> {
    return this.collection.find({ uploaderId }).toArray();
  }

  async remove(attachmentId: string): Promise<void> {
    await this.collection.deleteOne({ _id: attachmentId });
  }

  /** The attachments a message carries. */
  ofMessage(messageId: string): Promise<AttachmentDoc[]> {
    return this.collection.find({ messageId }).toArray();
  }
}
