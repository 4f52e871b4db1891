import { defineErrors } from '../platform/errors.js';

export const AttachmentsErrors = defineErrors('attachments', {
  E2EE_USE_ENCRYPTED_UPLOAD: { status: 400, message: 'End-to-end encrypted rooms take encrypted uploads only' },
  NO_FILES: { status: 400, message: 'Send at least one file' },
  PAYLOAD_INVALID: { status: 400, message: 'payload must be a JSON ChatMessage' },
  VARIANT_NOT_AVAILABLE: { status: 400, message: 'This attachment has no such variant' },
  LIMIT_FILES_PER_UPLOAD: { status: 400, message: 'At most 10 files per upload' },
  LIMIT_FILE_SIZE: { status: 400, message: 'A file is larger than any upload allows (250 MB)' },
  LIMIT_FILE_SIZE_IMAGE: { status: 400, message: 'An image is larger than images may be' },
  LIMIT_FILE_SIZE_VIDEO: { status: 400, message: 'A video is larger than videos may be' },
  LIMIT_FILE_SIZE_AUDIO: { status: 400, message: 'An audio file is larger than audio files may be' },
  LIMIT_FILE_SIZE_OTHER: { status: 400, message: 'A file is larger than files may be' },
  LIMIT_PARTS: { status: 400, message: 'Too many parts in the upload' },
  LIMIT_FIELDS: { status: 400, message: 'Too many fields in the upload' },
  UPLOAD_INCOMPLETE: { status: 400, message: 'The upload ended early' },
  TICKET_INVALID: { status: 401, message: 'This link is not valid' },
  TICKET_EXPIRED: { status: 401, message: 'This link has expired' },
  RANGE_NOT_SATISFIABLE: { status: 416, message: 'The range is outside the file' },
  LIMIT_FILES_IN_PROCESSING: { status: 429, message: 'Too many of your files are in processing; try again in a minute' },
  MEDIA_QUEUE_FULL: { status: 429, message: 'Processing is busy; try again in a minute' },
});
