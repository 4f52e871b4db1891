import { defineErrors } from '../platform/errors.js';

export const ContactsErrors = defineErrors('contacts', {
  RECIPIENT_REQUIRED: { status: 400, message: 'Give email, phone or recipientId' },
  EMAIL_INVALID: { status: 400, message: 'Not a valid e-mail address' },
  REQUEST_TO_SELF: { status: 400, message: 'You cannot connect to yourself' },
  BLOCKED: { status: 400, message: 'A block between you and this user prevents it' },
  ALREADY_CONNECTED: { status: 400, message: 'You are already connected' },
  REQUEST_EXISTS: { status: 400, message: 'A request between you is already pending' },
  REQUEST_NOT_FOUND: { status: 400, message: 'No such request addressed to you' },
  REQUEST_ALREADY_ANSWERED: { status: 400, message: 'This request was already answered' },
  ACCEPT_WITH_BLOCK: { status: 400, message: 'A request cannot be accepted and blocked at once' },
  NOT_CONNECTED: { status: 400, message: 'You are not connected to this user' },
  BLOCK_SELF: { status: 400, message: 'You cannot block yourself' },
  ALREADY_BLOCKED: { status: 400, message: 'This user is already blocked' },
  NOT_BLOCKED: { status: 400, message: 'This user is not blocked' },
  RECIPIENT_UNKNOWN: { status: 401, message: 'No user with this recipientId' },
  TOO_MANY_CONTACT_INVITES: { status: 429, message: 'Too many requests by phone number or e-mail address; try again later' },
});
