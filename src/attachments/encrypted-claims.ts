import { MessagesErrors } from '../messages/messages.errors.js';
import type { AttachmentsRepo } from './attachments.repo.js';

/**
 * A message of an end-to-end encrypted room takes the encrypted uploads it carries (stored by the e2ee
 * area): each an upload of its author to that room not used yet, each once. All or none: when one
 * cannot be taken, those taken are given back and the message is refused (400).
 */
export class EncryptedUploadClaims {
  constructor(private readonly repo: AttachmentsRepo) {}

  async claim(input: { roomId: string; uploaderId: string; messageId: string; attachmentIds: string[] }): Promise<void> {
    const taken: string[] = [];
    for (const id of input.attachmentIds) {
      if (!(await this.repo.claimEncrypted(id, input))) {
        await this.repo.releaseEncrypted(taken, input.messageId);
        throw MessagesErrors.ATTACHMENT_NOT_FOUND({ message: `No unused encrypted upload ${id} of yours in this room` });
      }
      taken.push(id);
    }
  }
}
