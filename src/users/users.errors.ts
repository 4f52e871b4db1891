import { defineErrors } from '../platform/errors.js';

export const UsersErrors = defineErrors('users', {
  USER_NOT_FOUND: { status: 400, message: 'No such user' },
  EMAIL_CODE_INVALID: { status: 400, message: 'The code is wrong, expired, or no address is waiting for confirmation; give the address again for a new code' },
  TWO_FACTOR_ALREADY_ENABLED: { status: 400, message: 'Two-factor authentication is already on; disable it first' },
  TWO_FACTOR_NOT_SET_UP: { status: 400, message: 'Call POST /api/users/2fa/setup first' },
  AVATAR_MISSING: { status: 400, message: 'Send the picture as one multipart `file` part' },
  AVATAR_NOT_AN_IMAGE: { status: 400, message: 'The file is not a JPEG, PNG, WebP, GIF, HEIF, AVIF or TIFF picture' },
  AVATAR_TOO_LARGE: { status: 413, message: 'The picture is too large' },
  AVATAR_TOO_MANY_PIXELS: { status: 400, message: 'The picture has more than 40 megapixels' },
  AVATAR_NOT_FOUND: { status: 404, message: 'No such picture' },
  TOO_MANY_ATTEMPTS: { status: 429, message: 'Too many wrong codes for this sign-in; sign in again' },
  ACCOUNT_SUSPENDED: { status: 403, message: 'This account is suspended by the service\'s administrators' },
  TWO_FACTOR_CODE_INVALID: { status: 400, message: 'The authenticator code is wrong or was already used' },
});
