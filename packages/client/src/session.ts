import { ApiError, OfflineError, SignedOutError } from './errors.js';
import type { KeyValueStore } from './store.js';

/** What a sign-in gives and the store keeps. */
export interface SessionTokens {
  accessToken: string;
  refreshToken: string;
  /** When the access token expires (milliseconds since the epoch). */
  accessExpiresAt: number;
  userId: string;
  deviceId: string;
}

/** The login and refresh answer, as the service gives it. */
export interface TokenAnswer {
  accessToken: string;
  refreshToken: string;
  expiresIn: number;
  userId: string;
  deviceId: string;
}

/** Refreshed this long before the access token expires (or at a tenth of its life, when shorter). */
const REFRESH_MARGIN_MS = 60_000;

/**
 * The session's tokens: an access token kept fresh (refreshed shortly before it expires, and at once
 * when the service refuses it), refresh tokens rotated on each use, one refresh at a time. A refusal
 * of the refresh (the device revoked or signed out elsewhere, or a spent token presented again, which
 * the service answers by revoking the device) ends the session: {@link SignedOutError}.
 */
export class Session {
  private tokens: SessionTokens | null = null;
  private refreshing: Promise<string> | null = null;
  private lifetimeMs = 15 * 60_000;

  constructor(
    private readonly store: KeyValueStore,
    private readonly key: string,
    private readonly baseUrl: string,
    private readonly fetch: (request: Request) => Promise<Response>,
    private readonly ended: (reason: string) => void,
  ) {}

  get current(): SessionTokens | null {
    return this.tokens;
  }

  async load(): Promise<SessionTokens | null> {
    this.tokens = await this.stored();
    return this.tokens;
  }

  async start(answer: TokenAnswer): Promise<void> {
    this.lifetimeMs = answer.expiresIn * 1000;
    this.tokens = { accessToken: answer.accessToken, refreshToken: answer.refreshToken, accessExpiresAt: Date.now() + answer.expiresIn * 1000, userId: answer.userId, deviceId: answer.deviceId };
    await this.store.set(this.key, JSON.stringify(this.tokens));
  }

  async clear(): Promise<void> {
    this.tokens = null;
    await this.store.delete(this.key);
  }

  /** An access token good for a while yet: the current one, or a fresh one. */
  async accessToken(): Promise<string> {
    const tokens = this.tokens;
    if (!tokens) throw new SignedOutError('NOT_SIGNED_IN');
    return this.fresh(tokens) ? tokens.accessToken : this.refresh();
  }

  /** A new token pair now (one refresh at a time: callers meanwhile share its answer). */
  refresh(): Promise<string> {
    this.refreshing ??= this.exchange().finally(() => (this.refreshing = null));
    return this.refreshing;
  }

  /** The tokens the store holds (another tab's or client's, perhaps). */
  private async stored(): Promise<SessionTokens | null> {
    const saved = await this.store.get(this.key);
    return saved ? (JSON.parse(saved) as SessionTokens) : null;
  }

  /** Good for a while yet: more than a tenth of a token's life (at most the margin) before it expires. */
  private fresh(tokens: SessionTokens): boolean {
    return tokens.accessExpiresAt - Date.now() > Math.min(REFRESH_MARGIN_MS, this.lifetimeMs / 10);
  }

  /**
   * One refresh at a time for every client on this store (a browser's tabs through the Web Locks API,
   * clients in one process through a lock of this module), each first taking what another one stored.
   */
  private exchange(): Promise<string> {
    return withLock(`chat-platform:${this.key}:refresh`, () => this.exchangeAlone());
  }

  private async exchangeAlone(): Promise<string> {
    const mine = this.tokens;
    if (!mine) throw new SignedOutError('NOT_SIGNED_IN');
    // Another tab or client on the same store may have refreshed meanwhile: its tokens are the current
    // ones (presenting ours, which its refresh spent, would be a reuse, and the service revokes the device).
    const stored = await this.stored();
    if (stored && stored.deviceId === mine.deviceId && stored.refreshToken !== mine.refreshToken) {
      this.tokens = stored;
      if (this.fresh(stored)) return stored.accessToken;
    }
    const tokens = this.tokens!;
    let response: Response;
    try {
      response = await this.fetch(
        new Request(`${this.baseUrl}/api/auth/refresh`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ refreshToken: tokens.refreshToken }) }),
      );
    } catch (error) {
      throw new OfflineError(error);
    }
    if (response.status === 401) {
      const error = await ApiError.of(response);
      // Not ours to end when another sign-in replaced the session meanwhile.
      if (this.tokens === tokens) {
        await this.clear();
        this.ended(error.code);
      }
      throw new SignedOutError(error.code);
    }
    if (!response.ok) throw await ApiError.of(response);
    await this.start((await response.json()) as TokenAnswer);
    return this.tokens!.accessToken;
  }
}

/** Locks held in this process, by name: where the Web Locks API is missing (Node, React Native). */
const held = new Map<string, Promise<void>>();

interface LockManagerLike {
  request<T>(name: string, run: () => Promise<T>): Promise<T>;
}

/** Runs `run` alone under `name`: across a browser's tabs with the Web Locks API, else within this process. */
async function withLock<T>(name: string, run: () => Promise<T>): Promise<T> {
  const locks = (globalThis as { navigator?: { locks?: LockManagerLike } }).navigator?.locks;
  if (locks) return locks.request(name, run);
  const before = held.get(name) ?? Promise.resolve();
  const result = before.then(run);
  const settled = result.then(
    () => undefined,
    () => undefined,
  );
  held.set(name, settled);
  try {
    return await result;
  } finally {
    if (held.get(name) === settled) held.delete(name);
  }
}
