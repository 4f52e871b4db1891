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
  APP_NOT_IN_ROOM: { status: 400, message: 'The app was not added to this room' },
});
