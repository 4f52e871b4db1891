/**
 * Loads every area's error declarations, so the catalogue is complete: the OpenAPI document, the
 * error table of docs/reference/errors.md and its test read it from here.
 */
import './platform/common.errors.js';
import './auth/auth.errors.js';
import './users/users.errors.js';
import './devices/devices.errors.js';
import './contacts/contacts.errors.js';
import './rooms/rooms.errors.js';
import './messages/messages.errors.js';
import './attachments/attachments.errors.js';
import './speech/speech.errors.js';
import './summaries/summaries.errors.js';
import './calls/calls.errors.js';
import './sfu/sfu.errors.js';
import './wallets/wallets.errors.js';
import './e2ee/e2ee.errors.js';
import './apps/apps.errors.js';
import './accounts/accounts.errors.js';
import './moderation/moderation.errors.js';

export { errorCatalogue, type CodedError } from './platform/errors.js';

import { errorCatalogue as all } from './platform/errors.js';

/** Markers around the error table of docs/reference/errors.md, which `npm run docs:tables` writes from the catalogue. */
export const ERROR_TABLE_MARKERS = { start: '<!-- error-table:start (npm run docs:tables writes it) -->', end: '<!-- error-table:end -->' } as const;

/** The error table: every declared code with its status, area and default message. */
export function errorTableMarkdown(): string {
  const rows = all().map((error) => `| ${error.status} | \`${error.code}\` | ${error.area} | ${error.message.replaceAll('|', '\\|')} |`);
  return ['| status | code | area | default message |', '|---|---|---|---|', ...rows].join('\n');
}
