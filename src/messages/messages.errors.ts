import { defineErrors } from '../platform/errors.js';

export const MessagesErrors = defineErrors('messages', {
  ATTACHMENT_NOT_FOUND: { status: 400, message: 'No such attachment' },
  EDIT_NOT_ALLOWED: { status: 400, message: 'Only its author edits a message, and not an app\'s card' },
  EDIT_WINDOW_PASSED: { status: 400, message: 'The message is too old to edit' },
  DELETE_NOT_ALLOWED: { status: 400, message: 'Only its author (for a while), the room\'s creator or an admin, or a site administrator deletes a message for everyone' },
  MESSAGE_DELETED: { status: 400, message: 'The message was deleted' },
  REPLY_TO_NOT_FOUND: { status: 400, message: 'No such message in this room to reply to' },
  EMOJI_INVALID: { status: 400, message: 'A reaction is one emoji' },
  TOO_MANY_REACTIONS: { status: 400, message: 'At most 3 different reactions per member on a message' },
  REACTIONS_DISABLED: { status: 400, message: 'This room\'s admins turned reactions off' },
  MESSAGE_NOT_FOUND: { status: 400, message: 'No such message' },
  ROOM_ID_MISMATCH: { status: 400, message: 'The body\'s roomId must equal the path\'s' },
  PUBLISH_NOT_ALLOWED: { status: 400, message: 'Only the creator or an admin may post here' },
  MESSAGE_NOT_ENCRYPTED: { status: 400, message: 'This room takes only end-to-end encrypted messages' },
  MESSAGE_EMPTY: { status: 400, message: 'The message is empty' },
  MESSAGE_TOO_LONG: { status: 400, message: 'The message is too long' },
  COMMENTS_DISABLED: { status: 400, message: 'This room does not take comments' },
  NOT_A_BROADCAST_POST: { status: 400, message: 'Only broadcast posts have translations' },
  TRANSLATION_NOT_ALLOWED: { status: 400, message: 'Only the room\'s creator or an admin, or a site administrator, may translate' },
  CURSOR_CONFLICT: { status: 400, message: 'Give before or after, not both' },
});
