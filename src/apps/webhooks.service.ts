import { randomUUID } from 'node:crypto';
import type { z } from 'zod';
import type { Clock } from '../platform/clock.js';
import type { ActivityDtoSchema } from './apps.schemas.js';
import type { ActivityDoc, AppDoc, AppsRepo } from './apps.repo.js';
import { openSecret, signatureHeader } from './secrets.js';
import type { CallGate } from './call-gate.js';
import { postWebhook, type FailureKind } from './webhook-client.js';

/** Why a call failed, or was not made: the breaker was open, or 8 calls were already in flight. */
export type CallFailure = FailureKind | 'BREAKER_OPEN' | 'TOO_MANY_CONCURRENT';

const ACTIVITY_KEPT_MS = 30 * 24 * 3600 * 1000;

export type ActivityView = z.infer<typeof ActivityDtoSchema>;

export const presentActivity = (doc: ActivityDoc): ActivityView => ({
  id: doc._id,
  deliveryId: doc.deliveryId,
  event: doc.event,
  outcome: doc.outcome,
  status: doc.status,
  ms: doc.ms,
  requestBytes: doc.requestBytes,
  replyBytes: doc.replyBytes,
  failure: doc.failure,
  createdAt: doc.createdAt.toISOString(),
});

export interface CallResult {
  activity: ActivityDoc;
  /** The app's JSON reply when the call succeeded and the reply keeps the contract. */
  reply: unknown;
}

/**
 * Calls to apps' webhooks (spec, "Calls to an app's webhook"): one signed POST per call with exactly
 * the spec's headers, the signature over `<timestamp>.<raw body>` with every secret in force, the
 * reply checked against the contract, and every call recorded on the app's activity list with its
 * outcome, status, time, sizes and failure. A 4xx is the app's error; everything else that is not a
 * reply is a failure.
 */
export class WebhooksService {
  constructor(
    private readonly deps: {
      repo: AppsRepo;
      gate: CallGate;
      secretKey: Buffer;
      allowPrivate: boolean;
      clock: Clock;
    },
  ) {}

  /** The app's secrets that sign now, newest first (a rotated-out one for 24 hours). */
  signingSecrets(app: AppDoc): string[] {
    const now = this.deps.clock().getTime();
    return app.secrets.filter((s) => s.retiresAt === null || s.retiresAt.getTime() > now).map((s) => openSecret(this.deps.secretKey, s.sealed));
  }

  async call(
    app: AppDoc,
    event: string,
    payload: object,
    options: { deliveryId?: string; okStatus?: (status: number) => boolean; keepsContract?: (reply: unknown) => boolean } = {},
  ): Promise<CallResult> {
    const deliveryId = options.deliveryId ?? randomUUID();
    const now = this.deps.clock();
    const timestamp = Math.floor(now.getTime() / 1000);
    const body = Buffer.from(JSON.stringify(payload));
    const headers = {
      'content-type': 'application/json; charset=utf-8',
      'user-agent': 'Service-Apps/1',
      'x-service-app': app._id,
      'x-service-delivery': deliveryId,
      'x-service-timestamp': String(timestamp),
      'x-service-signature': signatureHeader(this.signingSecrets(app), timestamp, body),
    };
    const callId = randomUUID();
    const admission = await this.deps.gate.admit(app._id, callId, now.getTime(), app.timeoutMs);
    let failure: CallFailure | null;
    let reply = { status: null as number | null, body: null as Buffer | null, json: null as unknown, ms: 0 };
    if (admission === 'OPEN' || admission === 'BUSY') {
      // Not called: the breaker is open, or the app already has 8 calls in flight (refused, not queued).
      failure = admission === 'OPEN' ? 'BREAKER_OPEN' : 'TOO_MANY_CONCURRENT';
    } else {
      const answered = await postWebhook({ url: app.webhookUrl, headers, body, timeoutMs: app.timeoutMs, allowPrivate: this.deps.allowPrivate, okStatus: options.okStatus ?? ((status) => status === 200) });
      reply = answered;
      failure = answered.failure;
      if (!failure && options.keepsContract && !options.keepsContract(answered.json)) failure = 'CONTRACT';
      // A 4xx is the app's own error, not a failure: it neither opens nor keeps open the breaker.
      await this.deps.gate.settle(app._id, callId, this.deps.clock().getTime(), failure !== null && failure !== 'CLIENT_ERROR', admission === 'PROBE');
    }
    const activity: ActivityDoc = {
      _id: randomUUID(),
      appId: app._id,
      deliveryId,
      event,
      outcome: failure === null ? 'OK' : failure === 'CLIENT_ERROR' ? 'APP_ERROR' : 'FAILED',
      status: reply.status,
      ms: reply.ms,
      requestBytes: body.length,
      replyBytes: reply.body?.length ?? 0,
      failure,
      createdAt: now,
    };
    await this.deps.repo.activity.insertOne(activity);
    return { activity, reply: failure === null ? reply.json : null };
  }

  /** Removes activity rows older than 30 days (spec, "Limits"); how many. */
  async deleteOldActivity(now: Date): Promise<number> {
    const removed = await this.deps.repo.activity.deleteMany({ createdAt: { $lt: new Date(now.getTime() - ACTIVITY_KEPT_MS) } });
    return removed.deletedCount;
  }

  /** A health check: a signed `{type: "ping", ts}`, answered `{type: "pong"}`. */
  ping(app: AppDoc): Promise<CallResult> {
    const ts = Math.floor(this.deps.clock().getTime() / 1000);
    return this.call(app, 'ping', { type: 'ping', ts }, { keepsContract: (reply) => (reply as { type?: unknown } | null)?.type === 'pong' });
  }
}
