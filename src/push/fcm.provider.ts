import { SignJWT, importPKCS8 } from 'jose';
import type { PushMessage, PushProvider, PushResult, PushTarget } from './push.js';
import { notNowMs } from './pacing.js';
import { z } from 'zod';

/** The fields of a Google service-account key file FCM needs. */
export const FcmServiceAccountSchema = z.object({ project_id: z.string().min(1), client_email: z.string().min(1), private_key: z.string().min(1), token_uri: z.string().optional() });
export type FcmServiceAccount = z.infer<typeof FcmServiceAccountSchema>;
const TokenAnswerSchema = z.object({ access_token: z.string(), expires_in: z.number() });
const SendRefusalSchema = z.object({ error: z.object({ status: z.string().optional(), details: z.array(z.object({ errorCode: z.string().optional() })).optional() }).optional() });

const SCOPE = 'https://www.googleapis.com/auth/firebase.messaging';

/** FCM HTTP v1: OAuth 2 access token from the service account (JWT bearer grant), then messages:send. */
export class FcmPushProvider implements PushProvider {
  readonly name = 'fcm';
  private accessToken: { value: string; expiresAt: number } | null = null;

  constructor(
    private readonly account: FcmServiceAccount,
    private readonly apiBase = 'https://fcm.googleapis.com',
  ) {}

  private async token(): Promise<string> {
    if (this.accessToken && this.accessToken.expiresAt - 60_000 > Date.now()) return this.accessToken.value;
    const tokenUri = this.account.token_uri ?? 'https://oauth2.googleapis.com/token';
    const key = await importPKCS8(this.account.private_key, 'RS256');
    const assertion = await new SignJWT({ scope: SCOPE })
      .setProtectedHeader({ alg: 'RS256', typ: 'JWT' })
      .setIssuer(this.account.client_email)
      .setAudience(tokenUri)
      .setIssuedAt()
      .setExpirationTime('1h')
      .sign(key);
    const response = await fetch(tokenUri, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer', assertion }),
      signal: AbortSignal.timeout(10_000),
    });
    if (!response.ok) throw new Error(`FCM token exchange answered ${response.status}`);
    const body = TokenAnswerSchema.parse(await response.json());
    this.accessToken = { value: body.access_token, expiresAt: Date.now() + body.expires_in * 1000 };
    return body.access_token;
  }

  async send(target: PushTarget, message: PushMessage): Promise<PushResult> {
    const url = `${this.apiBase}/v1/projects/${encodeURIComponent(this.account.project_id)}/messages:send`;
    const payload = {
      message: {
        token: target.token,
        data: message.data,
        ...(message.alert ? { notification: { title: message.alert.title, body: message.alert.body } } : {}),
        android: {
          priority: 'high',
          ttl: `${message.ttlSeconds}s`,
          ...(message.collapseId ? { collapse_key: message.collapseId } : {}),
          ...(message.badge === undefined ? {} : { notification: { notification_count: message.badge } }),
        },
      },
    };
    const response = await fetch(url, {
      method: 'POST',
      headers: { authorization: `Bearer ${await this.token()}`, 'content-type': 'application/json' },
      body: JSON.stringify(payload),
      signal: AbortSignal.timeout(10_000),
    });
    if (response.ok) return { ok: true };
    const error = SendRefusalSchema.safeParse(await response.json().catch(() => ({}))).data?.error;
    const code = error?.details?.find((d) => d.errorCode)?.errorCode ?? error?.status ?? `HTTP ${response.status}`;
    // 429 (QUOTA_EXCEEDED) and 503 (UNAVAILABLE) say when to come back; a 500 is retried with backoff (FCM's guidance).
    const wait = notNowMs(response.status, response.headers.get('retry-after'));
    if (wait !== undefined) return { ok: false, tokenInvalid: false, reason: code, retryAfterMs: wait };
    return { ok: false, tokenInvalid: code === 'UNREGISTERED' || (response.status === 404 && code === 'NOT_FOUND'), reason: code };
  }
}
