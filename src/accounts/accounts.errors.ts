import { defineErrors } from '../platform/errors.js';

export const AccountsErrors = defineErrors('accounts', {
  DELETION_CODE_INVALID: { status: 400, message: 'The code is wrong, used or expired; request a new one with POST /api/users/me/deletion/code' },
  EXPORT_TOO_SOON: { status: 429, message: 'One data export a day: the last one is under 24 hours old' },
  EXPORT_NOT_FOUND: { status: 400, message: 'No such data export of yours' },
  EXPORT_LINK_INVALID: { status: 401, message: 'This link is not valid or has expired; ask for a new one' },
  ACCOUNT_HOLDS_MONEY: { status: 400, message: 'The account cannot be deleted while money is in it or on its way: empty its wallets and wait for what is moving' },
});
