import { narrow } from '../platform/narrow.js';
import type { TokenService } from '../auth/index.js';
import type { MessagesService } from '../messages/index.js';
import type { DeviceEvents } from '../platform/device-events.js';
import type { Platform } from '../platform/platform.js';
import type { RoomsPolicy } from '../rooms/index.js';
import { QUEUES } from '../platform/queues.js';
import { mediaBaseUrl } from '../platform/config.js';
import { AttachmentsRepo, type AttachmentDoc } from './attachments.repo.js';
import { AttachmentsService } from './attachments.service.js';
import { MediaService } from './media.service.js';
import { EncryptedUploadClaims } from './encrypted-claims.js';

/**
 * Where attachments are kept, made before the messages area: messages of encrypted rooms claim the
 * encrypted uploads stored here (by the e2ee area), and the attachments area below builds on messages.
 */
export function attachmentsStore(p: Platform) {
  const repo = new AttachmentsRepo(p.db);
  /** Attachments removed with their stored files: the upload, its thumbnail, poster and MP4. A ticket for one stops opening it. */
  const removeAll = async (attachments: AttachmentDoc[]) => {
    for (const attachment of attachments) {
      const keys = [attachment.storageKey, attachment.thumbnailKey, attachment.convertedKey, attachment.posterKey].filter((key): key is string => typeof key === 'string' && key.length > 0);
      await Promise.all(keys.map((key) => p.storage.delete(key).catch(() => undefined)));
      await repo.remove(attachment._id);
    }
  };
  return {
    repo,
    encryptedClaims: new EncryptedUploadClaims(repo),
    /** What the e2ee area may do with attachments: store encrypted uploads, and find and delete those no message took. */
    encryptedUploads: narrow(repo, ['insertEncrypted', 'unusedEncryptedBefore', 'deleteIfUnused']),
    /** What a deleted message carried. */
    forgetMessageFiles: async (messageId: string) => removeAll(await repo.ofMessage(messageId)),
    /** What a deleted account uploaded. */
    forgetUploader: async (uploaderId: string) => removeAll(await repo.ofUploader(uploaderId)),
  };
}
export type AttachmentsStore = ReturnType<typeof attachmentsStore>;

export type EncryptedUploadStore = AttachmentsStore['encryptedUploads'];

/** Attachments: uploads, ticket links, and their processing (thumbnails, MP4, posters) in the worker. */
export function attachmentsArea(p: Platform, deps: { store: AttachmentsStore; messages: MessagesService; rooms: RoomsPolicy; tokens: TokenService; events: DeviceEvents }) {
  const { config } = p;
  const { repo } = deps.store;
  const attachments = new AttachmentsService({
    attachments: repo,
    messages: deps.messages,
    rooms: deps.rooms,
    storage: p.storage,
    enqueueMedia: (attachmentId) => p.queues.add(QUEUES.media, { attachmentId }),
    mediaBacklog: () => p.queues.backlog(QUEUES.media),
    mediaQueueMax: config.MEDIA_QUEUE_MAX,
    tokens: deps.tokens,
    ticketTtlSeconds: config.TICKET_TTL,
    publicBaseUrl: mediaBaseUrl(config),
    clock: p.clock,
    ephemeral: p.ephemeral,
    slotKey: (userId) => p.keys.slots('processing', userId),
  });
  return {
    repos: { attachments: repo },
    attachments,
    media: new MediaService({ attachments: repo, storage: p.storage, events: deps.events }),
    forgetUploader: deps.store.forgetUploader,
    /** The files a user uploaded, for their data export: each one's record and where its bytes are. */
    exportOf: async (uploaderId: string) =>
      (await repo.ofUploader(uploaderId)).map((a) => ({ id: a._id, messageId: a.messageId, roomId: a.roomId, filename: a.filename, contentType: a.contentType, size: a.size, encrypted: a.encrypted === true, createdAt: a.createdAt.toISOString(), storageKey: a.storageKey })),
  };
}

export type AttachmentsArea = ReturnType<typeof attachmentsArea>;

// What other areas use of this one (they import only this file).
export type { AttachmentDoc } from './attachments.repo.js';
export { cleanFileName } from './content-sniffer.js';
