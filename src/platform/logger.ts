import { pino, type DestinationStream, type Logger } from 'pino';
import type { Config } from './config.js';

/** Fields that never reach a log line, wherever they sit in a logged object. */
export const REDACTED_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'headers.authorization',
  '*.code',
  '*.token',
  '*.accessToken',
  '*.refreshToken',
  '*.twoFactorToken',
  '*.secret',
  '*.password',
  'code',
  'token',
  'secret',
];

/** An error code such as `DATABASE_UNAVAILABLE`: never a secret, so kept where a `code` field is redacted. */
const ERROR_CODE = /^[A-Z][A-Z0-9_]{2,63}$/;

/** `[REDACTED]`, except for error codes under a `code` key (sign-in codes are digits, never upper-snake). */
function censor(value: unknown, path: string[]): unknown {
  return path.at(-1) === 'code' && typeof value === 'string' && ERROR_CODE.test(value) ? value : '[REDACTED]';
}

const SECRET_QUERY_PARAMS = /([?&](?:code|token|secret|ticket|refreshToken|accessToken)=)[^&#]*/gi;

/** A URL with the values of secret-bearing query parameters replaced. */
export function redactUrl(url: string): string {
  return url.replace(SECRET_QUERY_PARAMS, '$1[REDACTED]');
}

export function createLogger(config: Pick<Config, 'LOG_LEVEL'>, name: string, destination?: DestinationStream): Logger {
  const options = {
    name,
    level: config.LOG_LEVEL,
    redact: { paths: REDACTED_PATHS, censor },
    base: { pid: process.pid },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  return destination ? pino(options, destination) : pino(options);
}

export type { Logger };
