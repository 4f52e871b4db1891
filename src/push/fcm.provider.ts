import http from 'node:http';
import https from 'node:https';
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
/** Connections kept open to FCM from one process: the pushes in flight (IN_FLIGHT, 256) share them. */
const CONNECTIONS = 64;
const SEND_TIMEOUT_MS = 10_000;

interface Answer {
  status: number;
  retryAfter: string | null;
  text: string;
}

/**
 * One POST over a connection the agent keeps open. Not `fetch`: a push is a small request, and
 * fetch's streams cost about twice the CPU of the request itself (bench:pushes' profile of the
 * worker: undici and web streams about 36% of it, with their garbage).
 */
function post(agent: http.Agent, url: URL, headers: Record<string, string>, body: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const request = (url.protocol === 'https:' ? https : http).request(url, { method: 'POST', agent, headers: { ...headers, 'content-length': Buffer.byteLength(body) } }, (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (text += chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, retryAfter: response.headers['retry-after'] ?? null, text }));
      response.on('error', reject);
    });
    request.setTimeout(SEND_TIMEOUT_MS, () => request.destroy(new Error(`FCM did not answer in ${SEND_TIMEOUT_MS} ms`)));
    request.on('error', reject);
    request.end(body);
  });
}

function parsedOrNothing(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return {};
  }
}

/** FCM HTTP v1: OAuth 2 access token from the service account (JWT bearer grant), then messages:send. */
export class FcmPushProvider implements PushProvider {
  readonly name = 'fcm';
  private accessToken: { value: string; expiresAt: number } | null = null;
  private readonly sendUrl: URL;
  private readonly agent: http.Agent;

  constructor(
    private readonly account: FcmServiceAccount,
    apiBase = 'https://fcm.googleapis.com',
  ) {
    this.sendUrl = new URL(`${apiBase}/v1/projects/${encodeURIComponent(account.project_id)}/messages:send`);
    const options = { keepAlive: true, maxSockets: CONNECTIONS };
    this.agent = this.sendUrl.protocol === 'https:' ? new https.Agent(options) : new http.Agent(options);
  }

  async close(): Promise<void> {
    this.agent.destroy();
  }

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
    const payload = {
      message: {
        token: target.token,
        data: message.data,
        ...(message.alert ? { notification: { title: message.alert.title, body: message.alert.body } } : {}),
        android: {
          // Quiet (do-not-disturb): normal priority, a low-priority notification without its sound.
          priority: message.quiet ? 'normal' : 'high',
          ttl: `${message.ttlSeconds}s`,
          ...(message.collapseId ? { collapse_key: message.collapseId } : {}),
          ...(message.badge === undefined && !message.quiet
            ? {}
            : { notification: { ...(message.badge === undefined ? {} : { notification_count: message.badge }), ...(message.quiet ? { notification_priority: 'PRIORITY_LOW', default_sound: false } : {}) } }),
        },
      },
    };
    const answer = await post(this.agent, this.sendUrl, { authorization: `Bearer ${await this.token()}`, 'content-type': 'application/json' }, JSON.stringify(payload));
    if (answer.status >= 200 && answer.status < 300) return { ok: true };
    const error = SendRefusalSchema.safeParse(parsedOrNothing(answer.text)).data?.error;
    const code = error?.details?.find((d) => d.errorCode)?.errorCode ?? error?.status ?? `HTTP ${answer.status}`;
    // 429 (QUOTA_EXCEEDED) and 503 (UNAVAILABLE) say when to come back; a 500 is retried with backoff (FCM's guidance).
    const wait = notNowMs(answer.status, answer.retryAfter);
    if (wait !== undefined) return { ok: false, tokenInvalid: false, reason: code, retryAfterMs: wait };
    return { ok: false, tokenInvalid: code === 'UNREGISTERED' || (answer.status === 404 && code === 'NOT_FOUND'), reason: code };
  }
}
