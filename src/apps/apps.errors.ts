import { defineErrors } from '../platform/errors.js';

export const AppsErrors = defineErrors('apps', {
  APP_NOT_FOUND: { status: 400, message: 'No such app of yours' },
  WEBHOOK_URL_INVALID: { status: 400, message: 'The webhook URL must be https:// to a public address' },
  MANIFEST_INVALID: { status: 400, message: 'The manifest breaks its own declarations' },
  MANIFEST_VERSION_EXISTS: { status: 400, message: 'This manifest version was uploaded with other content; give the change a new version' },
  CREDENTIAL_NOT_FOUND: { status: 400, message: 'No such token or key of this app' },
  APP_HAS_NO_MANIFEST: { status: 400, message: 'The app has no manifest yet' },
  NOT_REPLAYABLE: { status: 400, message: 'Only a payment event\'s delivery on the activity list can be replayed' },
  APP_TIMEOUT_ADMIN_ONLY: { status: 403, message: 'Only site administrators grant an app a longer reply time' },
  APP_NOT_INSTALLED: { status: 400, message: 'Install the app first' },
  INVOCATION_INVALID: { status: 400, message: 'The invocation does not fit the app\'s manifest' },
  INVOCATION_VALUES_INVALID: { status: 400, message: 'An answer breaks its input\'s rules' },
  INVOCATION_NOT_FOUND: { status: 400, message: 'No form under way with this invocation id' },
  INVOCATION_STEP_LIMIT: { status: 400, message: 'A form has at most 8 steps' },
  APP_NOT_FOR_E2EE: { status: 400, message: 'Apps cannot be added to end-to-end encrypted rooms: the service cannot show them what is said there' },
  BOT_TOKEN_INVALID: { status: 401, message: 'A valid room bot token (Authorization: Bearer bbt_…) is required' },
  BOT_TOKEN_OTHER_ROOM: { status: 403, message: 'This bot token is for another room, or the app was removed from this one' },
  TOO_MANY_BOT_CARDS: { status: 429, message: 'Too many cards from this bot token; try again shortly' },
  APP_NOT_IN_ROOM: { status: 400, message: 'The app was not added to this room' },
});
