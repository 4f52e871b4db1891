import type { DeviceSessions, DevicesService } from '../devices/index.js';
import type { DeviceEvents } from '../platform/device-events.js';
import type { Platform } from '../platform/platform.js';
import type { UserSignIn } from '../users/index.js';
import { AuthService } from './auth.service.js';
import { LoginCodesRepo } from './login-codes.repo.js';
import { TokenService } from './tokens.js';
import { WebSessions } from './web-sessions.js';

/** How long a console browser session lasts without signing in again. */
const WEB_SESSION_TTL_SECONDS = 12 * 3600;

/** Sign-in by SMS code and two-factor, refresh and sign-out, and the access-token check every entry point uses. */
export function authArea(p: Platform, deps: { users: UserSignIn; devices: DeviceSessions; devicesService: DevicesService; events: DeviceEvents }) {
  const { config } = p;
  const loginCodes = new LoginCodesRepo(p.db);
  const tokens = new TokenService(config.JWT_SECRET, config.ACCESS_TOKEN_TTL, config.TWO_FACTOR_TOKEN_TTL, p.clock);
  const auth = new AuthService({
    config,
    users: deps.users,
    devices: deps.devices,
    loginCodes,
    devicesService: deps.devicesService,
    events: deps.events,
    tokens,
    sms: p.sms,
    codes: p.codes,
    smsGuard: p.smsGuard,
    ephemeral: p.ephemeral,
    keys: p.keys.auth,
    domainEvents: p.domainEvents,
    clock: p.clock,
  });
  const { devices } = deps;
  const webSessions = new WebSessions({
    ephemeral: p.ephemeral,
    keys: p.keys.auth,
    auth,
    isActive: (deviceId, userId) => devices.isActive(deviceId, userId),
    ttlSeconds: WEB_SESSION_TTL_SECONDS,
  });
  /** A deleted account's number forgotten: the sign-in codes sent to it. */
  const forgetPhone = (phone: string) => loginCodes.forgetPhone(phone);
  return { repos: { loginCodes }, auth, tokens, webSessions, forgetPhone };
}

// What other areas use of this one (they import only this file).
export type { AuthService, LoginResult } from './auth.service.js';
export type { WebSession, WebSessions } from './web-sessions.js';
export { InvalidTokenError } from './tokens.js';
export type { TokenService } from './tokens.js';
