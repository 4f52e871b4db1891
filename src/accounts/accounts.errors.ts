import { defineErrors } from '../platform/errors.js';

export const AccountsErrors = defineErrors('accounts', {
  DELETION_CODE_INVALID: { status: 400, message: 'The code is wrong, used or expired; request a new one with POST /api/users/me/deletion/code' },
  ACCOUNT_HOLDS_MONEY: { status: 400, message: 'The account cannot be deleted while money is in it or on its way: empty its wallets and wait for what is moving' },
});
