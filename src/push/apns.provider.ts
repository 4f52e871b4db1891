import http2 from 'node:http2';
import { SignJWT, importPKCS8 } from 'jose';
import type { PushMessage, PushProvider, PushResult, PushTarget } from './push.js';
import { notNowMs } from './pacing.js';
import { z } from 'zod';

export interface ApnsOptions {
  /** Key id of the .p8 signing key. */
  keyId: string;
  teamId: string;
  /** PKCS#8 PEM of the ES256 signing key. */
  privateKey: string;
  /** App bundle id; VoIP pushes go to `<bundleId>.voip`. */
  bundleId: string;
  /** https://api.push.apple.com or https://api.sandbox.push.apple.com */
  origin: string;
}

/** Tokens are valid for up to an hour; Apple refuses refreshing more than once per 20 minutes. */
const TOKEN_REFRESH_MS = 40 * 60 * 1000;

/** APNs over HTTP/2 with a provider token (JWT, ES256) signed by `jose`. */
export class ApnsPushProvider implements PushProvider {
  readonly name = 'apns';
  private session: http2.ClientHttp2Session | null = null;
  private token: { value: string; madeAt: number } | null = null;

  constructor(private readonly options: ApnsOptions) {}

  private async providerToken(): Promise<string> {
    if (this.token && Date.now() - this.token.madeAt < TOKEN_REFRESH_MS) return this.token.value;
    const key = await importPKCS8(this.options.privateKey, 'ES256');
    const value = await new SignJWT({})
      .setProtectedHeader({ alg: 'ES256', kid: this.options.keyId })
      .setIssuer(this.options.teamId)
      .setIssuedAt()
      .sign(key);
    this.token = { value, madeAt: Date.now() };
    return value;
  }

  private connection(): http2.ClientHttp2Session {
    if (!this.session || this.session.closed || this.session.destroyed) {
      this.session = http2.connect(this.options.origin);
      this.session.on('error', () => {
        this.session = null;
      });
    }
    return this.session;
  }

  async send(target: PushTarget, message: PushMessage): Promise<PushResult> {
    const voip = message.kind === 'voip';
    // Quiet (do-not-disturb): no sound, and a passive interruption level (shown in the list, never lighting the screen).
    const sound = message.quiet ? { 'interruption-level': 'passive' } : { sound: 'default' };
    const aps = voip ? {} : { alert: message.alert, ...sound, 'mutable-content': 1, ...(message.badge === undefined ? {} : { badge: message.badge }) };
    const body = JSON.stringify({ aps, ...message.data });
    const headers: http2.OutgoingHttpHeaders = {
      ':method': 'POST',
      ':path': `/3/device/${encodeURIComponent(target.token)}`,
      authorization: `bearer ${await this.providerToken()}`,
      'apns-topic': voip ? `${this.options.bundleId}.voip` : this.options.bundleId,
      'apns-push-type': voip ? 'voip' : 'alert',
      'apns-priority': message.quiet ? '5' : '10',
      'apns-expiration': String(Math.floor(Date.now() / 1000) + message.ttlSeconds),
      'content-type': 'application/json',
    };
    if (message.collapseId) headers['apns-collapse-id'] = message.collapseId;

    const { status, text, retryAfter } = await new Promise<{ status: number; text: string; retryAfter?: string }>((resolve, reject) => {
      const request = this.connection().request(headers);
      let status = 0;
      let text = '';
      let retryAfter: string | undefined;
      request.setEncoding('utf8');
      request.setTimeout(10_000, () => request.close(http2.constants.NGHTTP2_CANCEL));
      request.on('response', (responseHeaders) => {
        status = Number(responseHeaders[':status']);
        retryAfter = responseHeaders['retry-after']?.toString();
      });
      request.on('data', (chunk: string) => (text += chunk));
      request.on('end', () => resolve({ status, text, retryAfter }));
      request.on('error', reject);
      request.end(body);
    });
    if (status === 200) return { ok: true };
    const reason = (() => {
      try {
        return z.object({ reason: z.string() }).safeParse(JSON.parse(text)).data?.reason ?? `HTTP ${status}`;
      } catch {
        return `HTTP ${status}`;
      }
    })();
    // 429 TooManyRequests (too many pushes to one device, or over the provider's rate), 503
    // ServiceUnavailable / Shutdown and 500: not now; APNs names no time, so a doubling backoff decides.
    const wait = notNowMs(status, retryAfter);
    if (wait !== undefined) return { ok: false, tokenInvalid: false, reason, retryAfterMs: wait };
    // 410 Unregistered, or 400 BadDeviceToken / DeviceTokenNotForTopic: the token will never work again.
    const tokenInvalid = status === 410 || ['BadDeviceToken', 'DeviceTokenNotForTopic', 'Unregistered'].includes(reason);
    return { ok: false, tokenInvalid, reason };
  }

  async close(): Promise<void> {
    this.session?.close();
  }
}
