import { defineErrors } from '../platform/errors.js';

export const SummariesErrors = defineErrors('summaries', {
  TLDR_NOT_IN_E2EE: { status: 400, message: 'The server cannot read end-to-end encrypted rooms' },
});
