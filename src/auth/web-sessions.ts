import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';
import type { EphemeralStore } from '../platform/ephemeral.js';
import type { Principal } from '../platform/principal.js';
import type { AuthService, SessionTokens } from './auth.service.js';

/** What a browser's session cookie stands for: the signed-in member, on a device of their own. */
export interface WebSession {
  principal: Principal;
  /** The token every form of the session carries (CSRF): random, compared in constant time. */
  csrf: string;
  /** The session's id in the store: a hash of the cookie, never the cookie itself. */
  id: string;
}

const COOKIE = /^[A-Za-z0-9_-]{43}$/;
const hashOf = (cookie: string) => createHash('sha256').update(cookie).digest('base64url');

/**
 * Browser sessions of the console (docs/apps/console.md). Each is a device of the member (made by the
 * same phone-code sign-in as a phone's), so it is listed with their devices, and revoking it there
 * signs the browser out: every request checks the device, as every access token check does.
 *
 * The cookie is 32 random bytes; the store keeps only its hash. A secret to be shown once (a new
 * webhook secret, a bot token) is kept a few minutes for the page after the redirect, encrypted with a
 * key derived from the cookie: the store alone cannot read it, and only that browser's next page can,
 * once.
 */
export class WebSessions {
  constructor(
    private readonly deps: {
      ephemeral: EphemeralStore;
      keys: { webSession: (id: string) => string; webShown: (id: string, shownId: string) => string };
      auth: Pick<AuthService, 'logout'>;
      isActive: (deviceId: string, userId: string) => Promise<boolean>;
      ttlSeconds: number;
    },
  ) {}

  /** How long a session lasts (the cookie's Max-Age). */
  get ttlSeconds(): number {
    return this.deps.ttlSeconds;
  }

  /** A session for the tokens a sign-in gave: the cookie to set. */
  async start(tokens: SessionTokens): Promise<string> {
    const cookie = randomBytes(32).toString('base64url');
    const stored = { userId: tokens.userId, deviceId: tokens.deviceId, csrf: randomBytes(24).toString('base64url') };
    await this.deps.ephemeral.put(this.deps.keys.webSession(hashOf(cookie)), JSON.stringify(stored), this.deps.ttlSeconds);
    return cookie;
  }

  /** The session a cookie stands for; null when none, expired, or its device was revoked. */
  async resolve(cookie: string | undefined): Promise<WebSession | null> {
    if (!cookie || !COOKIE.test(cookie)) return null;
    const id = hashOf(cookie);
    const raw = await this.deps.ephemeral.get(this.deps.keys.webSession(id));
    if (!raw) return null;
    const stored = JSON.parse(raw) as { userId: string; deviceId: string; csrf: string };
    if (!(await this.deps.isActive(stored.deviceId, stored.userId))) {
      await this.deps.ephemeral.remove(this.deps.keys.webSession(id));
      return null;
    }
    return { principal: { userId: stored.userId, deviceId: stored.deviceId }, csrf: stored.csrf, id };
  }

  /** Whether a form's token is the session's (constant time). */
  csrfMatches(session: WebSession, presented: unknown): boolean {
    if (typeof presented !== 'string') return false;
    const [a, b] = [Buffer.from(presented), Buffer.from(session.csrf)];
    return a.length === b.length && timingSafeEqual(a, b);
  }

  /** Signs out: the session is gone and its device revoked. */
  async end(session: WebSession): Promise<void> {
    await this.deps.ephemeral.remove(this.deps.keys.webSession(session.id));
    await this.deps.auth.logout(session.principal);
  }

  /** Keeps `text` for the session's next page (5 minutes at most, read once); the id to put in its URL. */
  async keepToShowOnce(cookie: string, session: WebSession, text: string): Promise<string> {
    const shownId = randomBytes(12).toString('base64url');
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', shownKey(cookie, shownId), iv);
    const sealed = Buffer.concat([iv, cipher.update(text, 'utf8'), cipher.final(), cipher.getAuthTag()]).toString('base64url');
    await this.deps.ephemeral.put(this.deps.keys.webShown(session.id, shownId), sealed, 300);
    return shownId;
  }

  /** The text kept by keepToShowOnce, removed as it is read: null the second time. */
  async takeShown(cookie: string, session: WebSession, shownId: string): Promise<string | null> {
    if (!/^[A-Za-z0-9_-]{16}$/.test(shownId)) return null;
    const sealed = await this.deps.ephemeral.take(this.deps.keys.webShown(session.id, shownId));
    if (!sealed) return null;
    const bytes = Buffer.from(sealed, 'base64url');
    const decipher = createDecipheriv('aes-256-gcm', shownKey(cookie, shownId), bytes.subarray(0, 12));
    decipher.setAuthTag(bytes.subarray(bytes.length - 16));
    return Buffer.concat([decipher.update(bytes.subarray(12, bytes.length - 16)), decipher.final()]).toString('utf8');
  }
}

function shownKey(cookie: string, shownId: string): Buffer {
  return Buffer.from(hkdfSync('sha256', cookie, shownId, 'console shown once', 32));
}
