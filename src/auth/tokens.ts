import { createHash, randomBytes, webcrypto } from 'node:crypto';
import { SignJWT, errors as joseErrors, jwtVerify } from 'jose';
import { TtlCache } from '../platform/cache/ttl-cache.js';
import { systemClock, type Clock } from '../platform/clock.js';
import type { DevicePlatform } from '../devices/index.js';
const ISSUER = 'chat-platform';
const ACCESS_AUDIENCE = 'api';
const TWO_FACTOR_AUDIENCE = 'auth-2fa';
const TICKET_AUDIENCE = 'media-ticket';
const EXPORT_TICKET_AUDIENCE = 'export-ticket';

export interface AccessClaims {
  userId: string;
  deviceId: string;
}

export interface TwoFactorClaims {
  userId: string;
  phone: string;
  device: { name: string; platform: DevicePlatform };
  /** Unique id of this sign-in attempt, used to count wrong codes and to make it single-use. */
  attemptId: string;
}

export class InvalidTokenError extends Error {
  constructor(readonly expired: boolean) {
    super(expired ? 'token expired' : 'token invalid');
  }
}

/** Signs and verifies the service's JWTs (HS256 with JWT_SECRET) and makes refresh tokens. */
export class TokenService {
  /**
   * The HMAC key, imported into WebCrypto once: given raw bytes, jose imports them again on every
   * sign and verify, which was about a tenth of the api's CPU per authenticated request.
   */
  private readonly key: Promise<webcrypto.CryptoKey>;

  constructor(
    secret: string,
    private readonly accessTtlSeconds: number,
    private readonly twoFactorTtlSeconds: number,
    private readonly clock: Clock = systemClock,
  ) {
    this.key = webcrypto.subtle.importKey('raw', new TextEncoder().encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign', 'verify']);
  }

  /** Now in whole seconds, as JWT times are. */
  private seconds(): number {
    return Math.floor(this.clock().getTime() / 1000);
  }

  async signAccess(claims: AccessClaims): Promise<string> {
    return new SignJWT({ did: claims.deviceId })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setSubject(claims.userId)
      .setIssuer(ISSUER)
      .setAudience(ACCESS_AUDIENCE)
      .setIssuedAt(this.seconds())
      .setExpirationTime(this.seconds() + this.accessTtlSeconds)
      .sign(await this.key);
  }

  /**
   * Access tokens already verified in this process, kept a minute (and never past their expiry): a
   * device sends the same token with every request for its whole life, and each verification is an
   * HMAC on the crypto thread pool. Only tokens that verified are kept.
   */
  private readonly verifiedAccess = new TtlCache<AccessClaims & { exp: number }>(60_000, 10_000, () => this.clock().getTime());

  async verifyAccess(token: string): Promise<AccessClaims> {
    const verified = await this.verifiedAccess.get(token, async () => {
      const payload = await this.verify(token, ACCESS_AUDIENCE);
      if (typeof payload.sub !== 'string' || typeof payload.did !== 'string' || typeof payload.exp !== 'number') throw new InvalidTokenError(false);
      return { userId: payload.sub, deviceId: payload.did, exp: payload.exp };
    });
    if (verified.exp * 1000 <= this.clock().getTime()) {
      this.verifiedAccess.delete(token);
      throw new InvalidTokenError(true);
    }
    return { userId: verified.userId, deviceId: verified.deviceId };
  }

  async signTwoFactor(claims: TwoFactorClaims): Promise<string> {
    return new SignJWT({ phone: claims.phone, device: claims.device })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setSubject(claims.userId)
      .setJti(claims.attemptId)
      .setIssuer(ISSUER)
      .setAudience(TWO_FACTOR_AUDIENCE)
      .setIssuedAt(this.seconds())
      .setExpirationTime(this.seconds() + this.twoFactorTtlSeconds)
      .sign(await this.key);
  }

  async verifyTwoFactor(token: string): Promise<TwoFactorClaims & { expiresAt: number }> {
    const payload = await this.verify(token, TWO_FACTOR_AUDIENCE);
    // Cast: a claim this service signed itself (signTwoFactor); the signature was verified.
    const device = payload.device as TwoFactorClaims['device'] | undefined;
    if (typeof payload.sub !== 'string' || typeof payload.jti !== 'string' || typeof payload.phone !== 'string' || !device || typeof payload.exp !== 'number') {
      throw new InvalidTokenError(false);
    }
    return { userId: payload.sub, phone: payload.phone, device, attemptId: payload.jti, expiresAt: payload.exp };
  }

  /**
   * A short-lived link credential for one attachment (spec, rule 7), or with `audience` 'export' for
   * one data export archive: not an access token, and a ticket of one kind opens nothing of the other.
   */
  async signTicket(subject: string, ttlSeconds: number, audience: 'media' | 'export' = 'media'): Promise<string> {
    return new SignJWT({})
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setSubject(subject)
      .setIssuer(ISSUER)
      .setAudience(audience === 'media' ? TICKET_AUDIENCE : EXPORT_TICKET_AUDIENCE)
      .setIssuedAt(this.seconds())
      .setExpirationTime(this.seconds() + ttlSeconds)
      .sign(await this.key);
  }

  async verifyTicket(token: string): Promise<{ attachmentId: string }> {
    const payload = await this.verify(token, TICKET_AUDIENCE);
    if (typeof payload.sub !== 'string') throw new InvalidTokenError(false);
    return { attachmentId: payload.sub };
  }

  /** The export a data export link opens. */
  async verifyExportTicket(token: string): Promise<{ exportId: string }> {
    const payload = await this.verify(token, EXPORT_TICKET_AUDIENCE);
    if (typeof payload.sub !== 'string') throw new InvalidTokenError(false);
    return { exportId: payload.sub };
  }

  private async verify(token: string, audience: string) {
    try {
      const { payload } = await jwtVerify(token, await this.key, { issuer: ISSUER, audience, algorithms: ['HS256'], currentDate: this.clock() });
      return payload;
    } catch (error) {
      throw new InvalidTokenError(error instanceof joseErrors.JWTExpired);
    }
  }
}

/** A refresh token: the device id, a dot, and 256 random bits. Only its SHA-256 is stored. */
export function newRefreshToken(deviceId: string): string {
  return `${deviceId}.${randomBytes(32).toString('base64url')}`;
}

export function deviceIdOfRefreshToken(token: string): string | null {
  const dot = token.indexOf('.');
  return dot > 0 ? token.slice(0, dot) : null;
}

/** SHA-256 hex; fit for high-entropy tokens (not for short codes, which get argon2). */
export function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}
