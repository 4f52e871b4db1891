import { defineErrors } from '../platform/errors.js';

export const AuthErrors = defineErrors('auth', {
  CODE_INVALID: { status: 400, message: 'The code is wrong, used or expired; request a new one if needed' },
  TOKEN_EXPIRED: { status: 401, message: 'The access token has expired; refresh it' },
  REFRESH_TOKEN_INVALID: { status: 401, message: 'The refresh token is invalid, expired or revoked' },
  REFRESH_TOKEN_REUSED: { status: 401, message: 'This refresh token was already used; the device was signed out' },
  TWO_FACTOR_TOKEN_INVALID: { status: 401, message: 'The two-factor token is invalid or expired; sign in again' },
  TOO_MANY_FROM_ADDRESS: { status: 429, message: 'Too many sign-in requests from this network; try again later' },
  CROSS_SITE_REFUSED: { status: 403, message: 'This form was sent from another site: open the console and send it from there' },
  CSRF_REFUSED: { status: 403, message: 'This form is out of date or was not sent from the console: reload the page and send it again' },
});
