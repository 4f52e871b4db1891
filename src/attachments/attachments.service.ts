import type { Clock } from '../platform/clock.js';
import type { z } from 'zod';
import { randomUUID } from 'node:crypto';
import { unlink } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import type { Principal } from '../platform/principal.js';
import { InvalidTokenError, type TokenService } from '../auth/index.js';
import type { AttachmentDoc, AttachmentsRepo } from './attachments.repo.js';
import type { RoomDoc } from '../rooms/index.js';
import type { BlobStorage } from '../platform/storage/storage.js';
import { MAX_PROCESSING_PER_USER, type StagedFile } from './attachment-limits.js';
import type { MessagesService, PostMessageInput, PostRequest } from '../messages/index.js';
import type { RoomsPolicy } from '../rooms/index.js';
import { page, type Page } from '../platform/paging.js';
import { AttachmentsErrors } from './attachments.errors.js';
import { MessagesErrors } from '../messages/messages.errors.js';
import { CommonErrors } from '../platform/common.errors.js';
import type { AttachmentDtoSchema } from './attachments.schemas.js';
import type { EphemeralStore } from '../platform/ephemeral.js';
import { withinLimit } from '../platform/limits.js';

/** As the AttachmentDto record of the OpenAPI document. */
export type AttachmentView = z.infer<typeof AttachmentDtoSchema>;

export function presentAttachment(a: AttachmentDoc): AttachmentView {
  return {
    id: a._id,
    roomId: a.roomId,
    messageId: a.messageId,
    uploaderId: a.uploaderId,
    filename: a.filename,
    contentType: a.contentType,
    kind: a.kind,
    size: a.size,
    status: a.status,
    hasThumbnail: a.thumbnailKey !== null,
    hasPoster: a.posterKey !== null,
    createdAt: a.createdAt.toISOString(),
  };
}

const needsProcessing = (kind: AttachmentDoc['kind']) => kind === 'IMAGE' || kind === 'VIDEO';
const RETRY_IN_A_MINUTE = 60;
const processingLimitReached = () =>
  AttachmentsErrors.LIMIT_FILES_IN_PROCESSING({ message: `At most ${MAX_PROCESSING_PER_USER} of your files can be in processing; try again in a minute`, retryAfter: RETRY_IN_A_MINUTE });
const RANGE = /^bytes=(\d*)-(\d*)$/;

/** Attachment uploads (spec, "Messages", rules 4 and 5). */
export class AttachmentsService {
  constructor(
    private readonly deps: {
      attachments: AttachmentsRepo;
      messages: MessagesService;
      rooms: RoomsPolicy;
      storage: BlobStorage;
      enqueueMedia: (attachmentId: string) => Promise<void>;
      mediaBacklog: () => Promise<number>;
      mediaQueueMax: number;
      tokens: TokenService;
      ticketTtlSeconds: number;
      publicBaseUrl: string;
      clock: Clock;
      /** Where uploads under way hold their slots of the per-user processing limit. */
      ephemeral: EphemeralStore;
      slotKey: (userId: string) => string;
    },
  ) {}

  /**
   * Before any file is read: the caller must be a member who may post (in a broadcast room the
   * creator or an admin), not in an end-to-end encrypted room, and not already at the processing limit.
   */
  async assertMayUpload(principal: Principal, roomId: string): Promise<RoomDoc> {
    const room = await this.deps.rooms.mayPost(principal, roomId);
    if (room.type === 'E2EE') throw AttachmentsErrors.E2EE_USE_ENCRYPTED_UPLOAD();
    // With 20 already in processing nothing more is taken (not even files that need none), before any is read.
    if ((await this.deps.attachments.countProcessing(principal.userId)) >= MAX_PROCESSING_PER_USER) throw processingLimitReached();
    return room;
  }

  /**
   * After every file passed its limits: posts the payload message (or an empty one), stores the
   * files, records them, and queues the images and videos for processing.
   */
  async commit(principal: Principal, room: RoomDoc, staged: StagedFile[], payload: PostMessageInput | undefined, request: PostRequest): Promise<void> {
    try {
      if (staged.length === 0) throw AttachmentsErrors.NO_FILES();
      const incoming = staged.filter((file) => needsProcessing(file.kind)).length;
      if (incoming === 0) return await this.store(principal, room, staged, payload, request);
      if ((await this.deps.mediaBacklog()) + incoming > this.deps.mediaQueueMax) throw AttachmentsErrors.MEDIA_QUEUE_FULL({ retryAfter: RETRY_IN_A_MINUTE });
      // The files to process hold slots of the per-user limit until recorded: concurrent uploads count each other's.
      await withinLimit(
        this.deps.ephemeral,
        this.deps.slotKey(principal.userId),
        {
          limit: MAX_PROCESSING_PER_USER,
          n: incoming,
          settled: () => this.deps.attachments.countProcessing(principal.userId),
          refuse: processingLimitReached,
        },
        () => this.store(principal, room, staged, payload, request),
      );
    } finally {
      await Promise.all(staged.map((file) => unlink(file.path).catch(() => undefined)));
    }
  }

  private async store(principal: Principal, room: RoomDoc, staged: StagedFile[], payload: PostMessageInput | undefined, request: PostRequest): Promise<void> {
    const ids = staged.map(() => randomUUID());
    const message = await this.deps.messages.postForAttachments(principal, room, payload, ids, request);
    const now = this.deps.clock();
    const docs: AttachmentDoc[] = [];
    for (const [i, file] of staged.entries()) {
      // `!`: one id was made per staged file.
      const id = ids[i]!;
      const storageKey = `rooms/${room._id}/${id}/original${path.extname(file.filename).toLowerCase().replace(/[^.a-z0-9]/g, '')}`;
      await this.deps.storage.putFile(storageKey, file.path, file.contentType);
      docs.push({
        _id: id,
        roomId: room._id,
        messageId: message.id,
        uploaderId: principal.userId,
        uploaderDeviceId: principal.deviceId,
        filename: file.filename,
        contentType: file.contentType,
        kind: file.kind,
        size: file.size,
        status: needsProcessing(file.kind) ? 'PROCESSING' : 'READY',
        storageKey,
        thumbnailKey: null,
        convertedKey: null,
        posterKey: null,
        error: null,
        createdAt: now,
      });
    }
    await this.deps.attachments.insertMany(docs);
    for (const doc of docs) if (doc.status === 'PROCESSING') await this.deps.enqueueMedia(doc._id);
  }

  /**
   * Rule 7: a link that opens this one attachment for a few minutes without the Authorization
   * header. The caller must have access to the room, and the attachment must belong to the message.
   */
  async ticket(principal: Principal, messageId: string, attachmentId: string): Promise<{ url: string; expiresAt: string }> {
    const attachment = await this.deps.attachments.findById(attachmentId);
    if (!attachment || attachment.messageId !== messageId) throw MessagesErrors.ATTACHMENT_NOT_FOUND({ message: 'No such attachment of this message' });
    await this.deps.rooms.mayRead(principal, attachment.roomId);
    const ttl = this.deps.ticketTtlSeconds;
    const ticket = await this.deps.tokens.signTicket(attachment._id, ttl);
    return { url: `${this.deps.publicBaseUrl}/media/${ticket}`, expiresAt: new Date((this.deps.clock()).getTime() + ttl * 1000).toISOString() };
  }

  /** What a ticket opens: the attachment's file, or one of its derived files. */
  async openTicket(ticket: string, variant: 'original' | 'thumbnail' | 'poster' | 'mp4'): Promise<{ key: string; contentType: string; filename: string }> {
    let attachmentId: string;
    try {
      ({ attachmentId } = await this.deps.tokens.verifyTicket(ticket));
    } catch (error) {
      if (error instanceof InvalidTokenError) throw error.expired ? AttachmentsErrors.TICKET_EXPIRED() : AttachmentsErrors.TICKET_INVALID();
      throw error;
    }
    const a = await this.deps.attachments.findById(attachmentId);
    if (!a) throw AttachmentsErrors.TICKET_INVALID();
    const chosen =
      variant === 'original'
        ? { key: a.storageKey, contentType: a.contentType, filename: a.filename }
        : variant === 'thumbnail' && a.thumbnailKey
          ? a.encrypted
            ? { key: a.thumbnailKey, contentType: 'application/octet-stream', filename: 'thumbnail.bin' }
            : { key: a.thumbnailKey, contentType: 'image/webp', filename: 'thumbnail.webp' }
          : variant === 'poster' && a.posterKey
            ? { key: a.posterKey, contentType: 'image/webp', filename: 'poster.webp' }
            : variant === 'mp4' && a.convertedKey
              ? { key: a.convertedKey, contentType: 'video/mp4', filename: `${path.parse(a.filename).name}.mp4` }
              : null;
    if (!chosen) throw AttachmentsErrors.VARIANT_NOT_AVAILABLE({ message: `This attachment has no ${variant}` });
    return chosen;
  }

  /**
   * What a ticket link answers: the whole file, or the byte range asked for (`bytes=a-b`, `bytes=a-`,
   * `bytes=-n` for the last n bytes); 416 for a range outside the file, 404 when the file is gone.
   */
  async download(
    ticket: string,
    variant: 'original' | 'thumbnail' | 'poster' | 'mp4',
    rangeHeader: string | undefined,
  ): Promise<{ status: 200 | 206; contentType: string; filename: string; size: number; range: { start: number; end: number } | null; body: Readable }> {
    const file = await this.openTicket(ticket, variant);
    const size = await this.deps.storage.size(file.key);
    if (size === null) throw CommonErrors.NOT_FOUND({ message: 'The file is gone' });
    const match = RANGE.exec(rangeHeader ?? '');
    if (match && (match[1] || match[2])) {
      const start = match[1] ? Number(match[1]) : Math.max(0, size - Number(match[2]));
      const end = match[1] && match[2] ? Math.min(Number(match[2]), size - 1) : size - 1;
      if (start > end || start >= size) {
        throw AttachmentsErrors.RANGE_NOT_SATISFIABLE({ headers: { 'content-range': `bytes */${size}` } });
      }
      return { status: 206, ...file, size, range: { start, end }, body: await this.deps.storage.read(file.key, { start, end }) };
    }
    return { status: 200, ...file, size, range: null, body: await this.deps.storage.read(file.key) };
  }

  /** Rule 5: a room's attachments, newest first, for those who may read the room. */
  async list(principal: Principal, roomId: string, pageSize: number, currentPage: number): Promise<Page<AttachmentView>> {
    await this.deps.rooms.mayRead(principal, roomId);
    const { items, total } = await this.deps.attachments.pageOfRoom(roomId, currentPage * pageSize, pageSize);
    return page(items.map(presentAttachment), total, pageSize, currentPage);
  }
}
