import { defineErrors } from '../platform/errors.js';

export const UsersErrors = defineErrors('users', {
  USER_NOT_FOUND: { status: 400, message: 'No such user' },
  EMAIL_TAKEN: { status: 400, message: 'Another account uses this e-mail address' },
  TWO_FACTOR_ALREADY_ENABLED: { status: 400, message: 'Two-factor authentication is already on; disable it first' },
  TWO_FACTOR_NOT_SET_UP: { status: 400, message: 'Call POST /api/users/2fa/setup first' },
  TWO_FACTOR_CODE_INVALID: { status: 400, message: 'The authenticator code is wrong or was already used' },
});
