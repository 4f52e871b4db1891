import type { Clock } from '../platform/clock.js';
import { randomUUID } from 'node:crypto';
import type { Config } from '../platform/config.js';
import { normalizePhone } from '../platform/phone.js';
import type { Principal } from '../platform/principal.js';
import type { DomainEvents } from '../platform/domain-events.js';
import { newSmsCode, type CodeHasher } from '../platform/code-hash.js';
import type { SmsGuard } from '../platform/sms/sms-guard.js';
import { networkOf } from '../platform/network.js';
import type { EphemeralStore } from '../platform/ephemeral.js';
import type { Keyspace } from '../platform/keyspace.js';
import { InvalidTokenError, TokenService, deviceIdOfRefreshToken, hashToken, newRefreshToken } from './tokens.js';
import type { DevicePlatform, DeviceSessions } from '../devices/index.js';
import type { LoginCodesRepo } from './login-codes.repo.js';
import { matchTotpStep, type UserDoc, type UserSignIn } from '../users/index.js';
import type { SmsProvider } from '../platform/sms/sms.js';
import type { DevicesService } from '../devices/index.js';
import type { DeviceEvents } from '../platform/device-events.js';
import { AuthErrors } from './auth.errors.js';
import { DevicesErrors } from '../devices/devices.errors.js';
import { CommonErrors } from '../platform/common.errors.js';
import { UsersErrors } from '../users/users.errors.js';

export interface SessionTokens {
  accessToken: string;
  refreshToken: string;
  /** Seconds until the access token expires. */
  expiresIn: number;
  deviceId: string;
  userId: string;
}

export type LoginResult = SessionTokens | { twoFactorRequired: true; twoFactorToken: string };

export interface DeviceInput {
  name: string;
  platform: DevicePlatform;
}

type AuthConfig = Pick<
  Config,
  | 'ACCESS_TOKEN_TTL'
  | 'REFRESH_TOKEN_TTL'
  | 'TWO_FACTOR_TOKEN_TTL'
  | 'LOGIN_CODE_TTL'
  | 'SIGNIN_CODES_PER_ADDRESS'
  | 'SIGNIN_CODES_PER_NETWORK'
  | 'SIGNIN_ATTEMPTS_PER_ADDRESS'
  | 'SIGNIN_ATTEMPTS_PER_NETWORK'
  | 'SIGNIN_ADDRESS_WINDOW'
  | 'LOGIN_CODE_MAX_ATTEMPTS'
  | 'LOGIN_CODE_MAX_PER_WINDOW'
  | 'LOGIN_CODE_WINDOW'
  | 'TOTP_ISSUER'
>;

const invalidCode = () => AuthErrors.CODE_INVALID();

/** Phone-number sign-in (docs/clients/sign-in.md) and the one access-token check REST and sockets share. */
export class AuthService {
  constructor(
    private readonly deps: {
      config: AuthConfig;
      users: UserSignIn;
      devices: DeviceSessions;
      loginCodes: LoginCodesRepo;
      devicesService: DevicesService;
      events: DeviceEvents;
      tokens: TokenService;
      sms: SmsProvider;
      codes: CodeHasher;
      smsGuard: Pick<SmsGuard, 'check'>;
      ephemeral: EphemeralStore;
      keys: Keyspace['auth'];
      /** Told of each new session, once the device exists (so device events reach it). */
      domainEvents: DomainEvents;
      clock: Clock;
    },
  ) {}

  private now(): Date {
    return this.deps.clock();
  }

  private phoneOrThrow(input: string): string {
    const phone = normalizePhone(input);
    if (!phone) throw CommonErrors.PHONE_INVALID();
    return phone;
  }

  /**
   * Counts one request of a kind from the client's address and its network, and refuses (429
   * TOO_MANY_FROM_ADDRESS) past either limit: the same answer for both, with the longer wait.
   */
  private async countFromAddress(kind: 'codes' | 'attempts', ip: string): Promise<void> {
    const { config, ephemeral, keys } = this.deps;
    const [perAddress, perNetwork] = kind === 'codes' ? [config.SIGNIN_CODES_PER_ADDRESS, config.SIGNIN_CODES_PER_NETWORK] : [config.SIGNIN_ATTEMPTS_PER_ADDRESS, config.SIGNIN_ATTEMPTS_PER_NETWORK];
    const [address, network] = await Promise.all([
      ephemeral.hit(keys.fromAddress(kind, 'address', ip), perAddress, config.SIGNIN_ADDRESS_WINDOW),
      ephemeral.hit(keys.fromAddress(kind, 'network', networkOf(ip)), perNetwork, config.SIGNIN_ADDRESS_WINDOW),
    ]);
    if (!address.allowed || !network.allowed) {
      throw AuthErrors.TOO_MANY_FROM_ADDRESS({ retryAfter: Math.max(address.allowed ? 0 : address.retryAfter, network.allowed ? 0 : network.retryAfter) });
    }
  }

  /** Sends a new six-digit code by SMS; only its argon2 hash is kept, and older codes die. */
  async requestCode(phoneInput: string, client: { ip: string }): Promise<void> {
    const { config, loginCodes, ephemeral, keys, sms } = this.deps;
    const phone = this.phoneOrThrow(phoneInput);
    // The cheap checks first: where texts may go, the client's address and network, the number's
    // own limit; only then a hash.
    this.deps.smsGuard.check(phone);
    await this.countFromAddress('codes', client.ip);
    const limit = await ephemeral.hit(keys.codeRequests(phone), config.LOGIN_CODE_MAX_PER_WINDOW, config.LOGIN_CODE_WINDOW);
    if (!limit.allowed) throw CommonErrors.TOO_MANY_CODES({ retryAfter: limit.retryAfter });

    const code = newSmsCode();
    const now = this.now();
    await loginCodes.retireLive(phone, now);
    await loginCodes.insert({
      _id: randomUUID(),
      phone,
      codeHash: await this.deps.codes.hash(code),
      attempts: 0,
      createdAt: now,
      expiresAt: new Date(now.getTime() + config.LOGIN_CODE_TTL * 1000),
      consumedAt: null,
    });
    const minutes = Math.max(1, Math.round(config.LOGIN_CODE_TTL / 60));
    await sms.send({ to: phone, text: `${code} is your ${config.TOTP_ISSUER} code. It expires in ${minutes} minutes.`, code });
  }

  private dummyHash: Promise<string> | undefined;

  /** A hash no code matches, at the configured cost: what a wrong code is checked against when no code is live. */
  private dummyCodeHash(): Promise<string> {
    this.dummyHash ??= this.deps.codes.hash(randomUUID()).catch((error: unknown) => {
      this.dummyHash = undefined;
      throw error;
    });
    return this.dummyHash;
  }

  /** Checks the SMS code; answers tokens, or a two-factor challenge when the user has two-factor on. */
  async login(input: { phone: string; code: string; device: DeviceInput }, client: { ip: string }): Promise<LoginResult> {
    const { config, loginCodes, users, tokens } = this.deps;
    const phone = this.phoneOrThrow(input.phone);
    await this.countFromAddress('attempts', client.ip);
    const now = this.now();
    const live = await loginCodes.findLatestLive(phone, now);
    // The try is counted before the check, so parallel guesses cannot exceed the allowance.
    const attempt = live ? await loginCodes.takeAttempt(live._id, config.LOGIN_CODE_MAX_ATTEMPTS, now) : null;
    // One answer for every wrong code, with a hash checked either way: whether the number has a live
    // code (someone is signing in with it), and how many tries it has left, is not told by the answer
    // or by its time.
    const matches = await this.deps.codes.verify(attempt?.codeHash ?? (await this.dummyCodeHash()), input.code);
    if (!attempt || !matches || !(await loginCodes.consume(attempt._id, this.now()))) throw invalidCode();

    const user = await users.findOrCreateByPhone(phone, this.now());
    // A suspended account is told why, with a code a phone can show; nothing is signed in.
    if (user.suspension) throw UsersErrors.ACCOUNT_SUSPENDED({ message: `This account is suspended: ${user.suspension.reason}` });
    if (user.twoFactor.enabled) {
      const twoFactorToken = await tokens.signTwoFactor({ userId: user._id, phone, device: input.device, attemptId: randomUUID() });
      return { twoFactorRequired: true, twoFactorToken };
    }
    return this.startSession(user, input.device);
  }

  /** Second step of a two-factor sign-in: the TOTP code for the challenge token from `login`. */
  async completeTwoFactor(input: { twoFactorToken: string; code: string }, client: { ip: string }): Promise<SessionTokens> {
    const { config, users, tokens, ephemeral, keys } = this.deps;
    await this.countFromAddress('attempts', client.ip);
    let claims;
    try {
      claims = await tokens.verifyTwoFactor(input.twoFactorToken);
    } catch (error) {
      if (error instanceof InvalidTokenError) throw AuthErrors.TWO_FACTOR_TOKEN_INVALID();
      throw error;
    }
    const ttl = Math.max(1, claims.expiresAt - Math.floor(this.now().getTime() / 1000));
    const tries = await ephemeral.hit(keys.twoFactorTries(claims.attemptId), config.LOGIN_CODE_MAX_ATTEMPTS, ttl);
    if (!tries.allowed) throw UsersErrors.TOO_MANY_ATTEMPTS({ retryAfter: tries.retryAfter });

    const usedKey = keys.twoFactorUsed(claims.attemptId);
    const spent = () => AuthErrors.TWO_FACTOR_TOKEN_INVALID({ message: 'The two-factor token was already used; sign in again' });
    // A spent challenge is refused before it can use up an authenticator code.
    if (await ephemeral.exists(usedKey)) throw spent();
    const user = await users.findById(claims.userId);
    if (!user || user.phone !== claims.phone) throw AuthErrors.TWO_FACTOR_TOKEN_INVALID();
    if (user.twoFactor.enabled && user.twoFactor.secret) {
      const step = await matchTotpStep(user.twoFactor.secret, input.code, this.now());
      if (step === null || !(await users.claimTotpStep(user._id, step))) {
        throw UsersErrors.TWO_FACTOR_CODE_INVALID();
      }
    }
    // One challenge token starts at most one session, also when two requests race past the check above.
    if (!(await ephemeral.putIfAbsent(usedKey, '1', ttl))) throw spent();
    return this.startSession(user, claims.device);
  }

  /** Swaps a refresh token for a new pair. A spent token presented again revokes the device's session. */
  async refresh(refreshToken: string): Promise<SessionTokens> {
    const { config, devices, devicesService, tokens } = this.deps;
    const deviceId = deviceIdOfRefreshToken(refreshToken);
    if (!deviceId) throw AuthErrors.REFRESH_TOKEN_INVALID({ message: 'The refresh token is invalid' });
    const presented = hashToken(refreshToken);
    const next = newRefreshToken(deviceId);
    const now = this.now();
    const rotated = await devices.rotateRefreshToken(deviceId, presented, hashToken(next), new Date(now.getTime() + config.REFRESH_TOKEN_TTL * 1000), now);
    if (rotated) {
      return {
        accessToken: await tokens.signAccess({ userId: rotated.userId, deviceId }),
        refreshToken: next,
        expiresIn: config.ACCESS_TOKEN_TTL,
        deviceId,
        userId: rotated.userId,
      };
    }
    const device = await devices.findById(deviceId);
    if (device && device.revokedAt === null && device.spentRefreshHashes.includes(presented)) {
      await devicesService.revokeDevice(device._id, device.userId);
      throw AuthErrors.REFRESH_TOKEN_REUSED();
    }
    throw AuthErrors.REFRESH_TOKEN_INVALID();
  }

  /** The clean-up's part: removes login codes whose life ended. */
  deleteExpiredCodes(now: Date): Promise<number> {
    return this.deps.loginCodes.deleteExpired(now);
  }

  async logout(principal: Principal): Promise<void> {
    await this.deps.devicesService.revokeDevice(principal.deviceId, principal.userId);
  }

  /**
   * The access-token check every entry point uses (REST routes and the socket handshake): a valid
   * signature and expiry, and a device that is still active, so revocation works at once.
   */
  async authenticate(accessToken: string): Promise<Principal> {
    let claims;
    try {
      claims = await this.deps.tokens.verifyAccess(accessToken);
    } catch (error) {
      if (error instanceof InvalidTokenError) {
        throw error.expired ? AuthErrors.TOKEN_EXPIRED() : CommonErrors.UNAUTHORIZED();
      }
      throw error;
    }
    if (!(await this.deps.devices.isActive(claims.deviceId, claims.userId))) throw DevicesErrors.DEVICE_REVOKED();
    return { userId: claims.userId, deviceId: claims.deviceId };
  }

  private async startSession(user: UserDoc, device: DeviceInput): Promise<SessionTokens> {
    const { config, devices, tokens } = this.deps;
    const now = this.now();
    const deviceId = randomUUID();
    const refreshToken = newRefreshToken(deviceId);
    await devices.insert({
      _id: deviceId,
      userId: user._id,
      name: device.name,
      platform: device.platform,
      createdAt: now,
      lastSeenAt: now,
      revokedAt: null,
      refreshTokenHash: hashToken(refreshToken),
      refreshExpiresAt: new Date(now.getTime() + config.REFRESH_TOKEN_TTL * 1000),
      spentRefreshHashes: [],
      pushToken: null,
      voipPushToken: null,
    });
    // A sign-in that raced the account's deletion: the deletion marks the account before it revokes
    // its devices, so a device stored after that revocation finds the mark here and is revoked itself.
    if ((await this.deps.users.findById(user._id))?.deletedAt) {
      await devices.revoke(deviceId, user._id, this.now());
      throw CommonErrors.UNAUTHORIZED({ message: 'This account was just deleted' });
    }
    // The account's other devices hear of the new sign-in (and get a push when offline).
    await this.deps.events.toUsers([user._id], 'device.added', { deviceId, name: device.name, platform: device.platform }, { exceptDeviceId: deviceId });
    await this.deps.domainEvents.emit('user.signed-in', { userId: user._id, phone: user.phone, deviceId });
    return {
      accessToken: await tokens.signAccess({ userId: user._id, deviceId }),
      refreshToken,
      expiresIn: config.ACCESS_TOKEN_TTL,
      deviceId,
      userId: user._id,
    };
  }
}
