import { defineErrors } from '../platform/errors.js';

export const ModerationErrors = defineErrors('moderation', {
  REPORT_TARGET_NOT_FOUND: { status: 400, message: 'No such message, user, room or app among those you can see' },
  REPORT_SELF: { status: 400, message: 'You cannot report yourself' },
  MODERATION_ACTION_INVALID: { status: 400, message: 'This action does not apply to this kind of target' },
  NOTHING_TO_DECIDE: { status: 400, message: 'No open report about this target' },
  TOO_MANY_REPORTS: { status: 429, message: 'Too many reports from this account; try again later' },
});
