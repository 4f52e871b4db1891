import { defineErrors } from '../platform/errors.js';

export const AuthErrors = defineErrors('auth', {
  CODE_INVALID: { status: 400, message: 'The code is wrong, used or expired; request a new one if needed' },
  TOKEN_EXPIRED: { status: 401, message: 'The access token has expired; refresh it' },
  REFRESH_TOKEN_INVALID: { status: 401, message: 'The refresh token is invalid, expired or revoked' },
  REFRESH_TOKEN_REUSED: { status: 401, message: 'This refresh token was already used; the device was signed out' },
  TWO_FACTOR_TOKEN_INVALID: { status: 401, message: 'The two-factor token is invalid or expired; sign in again' },
  TOO_MANY_FROM_ADDRESS: { status: 429, message: 'Too many sign-in requests from this network; try again later' },
});
