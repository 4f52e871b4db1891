import { createSecretKey, randomUUID, type KeyObject } from 'node:crypto';
import type { z } from 'zod';
import type { Clock } from '../../platform/clock.js';
import type { ActivityDtoSchema } from '../apps.schemas.js';
import type { ActivityDoc, AppDoc, AppsRepo, DeliveryDoc, StoredSecret } from '../apps.repo.js';
import type { WebhookJob } from '../../platform/queues.js';
import { BREAKER_FAILURES, BREAKER_OPEN_MS, BREAKER_WINDOW_MS } from './call-gate.js';
import { openSecret, sealSecret, signatureHeader } from '../console/secrets.js';
import type { CallGate } from './call-gate.js';
import { postWebhook, type FailureKind } from './webhook-client.js';
import { must } from '../../platform/must.js';
import { propertyOf } from '../../platform/errors.js';
import { paymentReplyRefusal } from '../shared/cards.js';
import { limiter } from '../../platform/limiter.js';

/** Why a call failed, or was not made: the breaker was open, or 8 calls were already in flight. */
export type CallFailure = FailureKind | 'BREAKER_OPEN' | 'TOO_MANY_CONCURRENT';

const ACTIVITY_KEPT_MS = 30 * 24 * 3600 * 1000;
/** A claimed attempt is held this long: the longest reply time an app may be granted (120 s), and 30 s more. */
const CLAIM_MS = 150_000;
/**
 * A first attempt's job that starts within this of its delivery's recording makes the attempt on the
 * hold it was recorded with (CLAIM_MS: 150 s, less 10 s here and 20 s of clocks apart, leaves the
 * longest reply time, 120 s); a later one holds it again first (`renewClaim`).
 */
const FRESH_MS = 10_000;
/** A pending delivery whose job is this late was lost: the sweep arms it again. */
const OVERDUE_MS = 60_000;
/** Health checks in flight at once: 60 apps that hang for their 5 s take 20 s, not 5 minutes. */
const PING_POOL = 16;

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
  detail: doc.detail ?? null,
  appErrorCode: doc.appErrorCode ?? null,
  test: doc.test === true,
  request: doc.request ?? null,
  reply: doc.reply ?? null,
  createdAt: doc.createdAt.toISOString(),
});

/** Whether a call's body is a test payment's event. */
const isTestPaymentEvent = (payload: object) => 'payment' in payload && typeof payload.payment === 'object' && payload.payment !== null && 'test' in payload.payment && payload.payment.test === true;

/** How much of a call's request and reply body an activity row keeps (characters of UTF-8 text). */
export const BODY_EXCERPT_CHARS = 2_048;

/** A body as the activity row keeps it: its text, cut at BODY_EXCERPT_CHARS with how long it was. */
export function bodyExcerpt(body: Buffer): string {
  const text = body.toString('utf8');
  return text.length <= BODY_EXCERPT_CHARS ? text : `${text.slice(0, BODY_EXCERPT_CHARS)}… (${body.length} bytes in all)`;
}

export interface CallResult {
  /** Null only for a queued delivery that found 8 calls in flight: it waits in the queue instead (see deliver). */
  activity: ActivityDoc | null;
  /** The app's JSON reply when the call succeeded and the reply keeps the contract. */
  reply: unknown;
  retryAfterSeconds: number | null;
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
      /** Adds a delivery attempt to the `webhooks` queue, after `delayMs`. */
      enqueue: (job: WebhookJob, delayMs: number) => Promise<void>;
      /** Seconds between a payment event's attempts. */
      retrySchedule: number[];
      secretKey: Buffer;
      allowPrivate: boolean;
      dnsServer?: string | undefined;
      clock: Clock;
    },
  ) {}

  /** The app's secrets that sign now, newest first (a rotated-out one for 24 hours). */
  signingSecrets(app: AppDoc): KeyObject[] {
    const now = this.deps.clock().getTime();
    return app.secrets.filter((s) => s.retiresAt === null || s.retiresAt.getTime() > now).map((s) => this.signingKeyOf(s));
  }

  /**
   * A stored secret opened as an HMAC key, once for as long as its app's document is held (the
   * worker's app cache keeps one for a few seconds): not decrypted and imported again on every call.
   */
  private signingKeyOf(secret: StoredSecret): KeyObject {
    let key = this.signingKeys.get(secret);
    if (!key) {
      key = createSecretKey(Buffer.from(openSecret(this.deps.secretKey, secret.sealed), 'utf8'));
      this.signingKeys.set(secret, key);
    }
    return key;
  }

  private readonly signingKeys = new WeakMap<StoredSecret, KeyObject>();

  async call(
    app: AppDoc,
    event: string,
    payload: object,
    options: {
      deliveryId?: string;
      okStatus?: (status: number) => boolean;
      jsonRequired?: boolean;
      /** What in the reply breaks the contract (a CONTRACT failure), or null when it keeps it. */
      contractBreach?: (reply: unknown) => string | null;
      /** What of a reply that does not fail the call is refused all the same (recorded as the activity's detail). */
      replyNote?: (reply: unknown) => string | null;
      waitWhenBusy?: boolean;
    } = {},
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
    let detail: string | null;
    let reply: { status: number | null; body: Buffer | null; json: unknown; ms: number; retryAfterSeconds: number | null } = { status: null, body: null, json: null, ms: 0, retryAfterSeconds: null };
    if (admission === 'BUSY' && options.waitWhenBusy) return { activity: null, reply: null, retryAfterSeconds: null };
    if (admission === 'OPEN' || admission === 'BUSY') {
      // Not called: the breaker is open, or the app already has 8 calls in flight (refused, not queued).
      failure = admission === 'OPEN' ? 'BREAKER_OPEN' : 'TOO_MANY_CONCURRENT';
      detail = admission === 'OPEN' ? await this.notSentWhileOpen(app._id, now.getTime()) : 'Not sent: 8 calls to the app were in flight already';
    } else {
      const answered = await postWebhook({
        url: app.webhookUrl,
        headers,
        body,
        timeoutMs: app.timeoutMs,
        allowPrivate: this.deps.allowPrivate,
        dnsServer: this.deps.dnsServer,
        okStatus: options.okStatus ?? ((status) => status === 200),
        ...(options.jsonRequired === undefined ? {} : { jsonRequired: options.jsonRequired }),
      });
      reply = answered;
      failure = answered.failure;
      detail = failure ? null : (options.contractBreach?.(answered.json) ?? null);
      if (detail !== null) failure = 'CONTRACT';
      else if (!failure && answered.json !== null && answered.json !== undefined) detail = options.replyNote?.(answered.json) ?? null;
      // A 4xx is the app's own error, not a failure: it neither opens nor keeps open the breaker.
      await this.deps.gate.settle(app._id, callId, this.deps.clock().getTime(), failure !== null && failure !== 'CLIENT_ERROR', admission === 'PROBE');
    }
    const sent = admission !== 'OPEN' && admission !== 'BUSY';
    const activity: ActivityDoc = {
      _id: randomUUID(),
      appId: app._id,
      deliveryId,
      event,
      outcome: failure === null ? 'OK' : failure === 'CLIENT_ERROR' ? 'APP_ERROR' : 'FAILED',
      status: reply.status,
      ms: reply.ms,
      // Not sent (the breaker open, 8 in flight): no request to show.
      requestBytes: sent ? body.length : 0,
      replyBytes: reply.body?.length ?? 0,
      failure,
      detail,
      // What was sent and what came back, so the owner can see a call without logging it themselves.
      ...(sent ? { request: bodyExcerpt(body) } : {}),
      reply: reply.body ? bodyExcerpt(reply.body) : null,
      ...(isTestPaymentEvent(payload) ? { test: true } : {}),
      createdAt: now,
    };
    await this.deps.repo.insertActivity(activity);
    // "Used in the last 24 hours" needs no more than a minute's precision: one write a minute at most.
    const used = event !== 'ping' && sent;
    if (used && (app.lastUsedAt === null || now.getTime() - app.lastUsedAt.getTime() > 60_000)) await this.deps.repo.updateApp(app._id, { $set: { lastUsedAt: now } });
    return { activity, reply: failure === null ? reply.json : null, retryAfterSeconds: reply.retryAfterSeconds };
  }

  /**
   * Sends a call through the delivery queue (worker role). `retry` (payment events): a failed
   * attempt is tried again on the schedule with the same delivery id, any 2xx answering it.
   *
   * The delivery is recorded with its first attempt held for the job queued here, and the job carries
   * what that attempt needs (the body sealed): the worker makes it without reading the record, and
   * writes only its activity row and the delivery's end. A delivery recorded before (the same id)
   * goes on from where it stands, unless an attempt of it is held now (its holder, or the sweep,
   * goes on with it).
   */
  async enqueue(appId: string, event: string, payload: object, options: { retry: boolean; deliveryId?: string }): Promise<string> {
    const { delivery, recorded } = await this.record(appId, event, payload, options);
    if (recorded) {
      const first = { appId, event, retry: options.retry, sealed: sealSecret(this.deps.secretKey, delivery.payload), recordedAt: delivery.createdAt.getTime() };
      await this.deps.enqueue({ deliveryId: delivery._id, attempt: 0, round: delivery.round, first }, 0);
    } else if (!this.held(delivery)) {
      await this.deps.enqueue({ deliveryId: delivery._id, attempt: delivery.attempts, round: delivery.round }, 0);
    }
    return delivery._id;
  }

  /** Whether an attempt of the delivery is held by a worker now. */
  private held(delivery: DeliveryDoc): boolean {
    return delivery.status === 'PENDING' && delivery.claimedUntil !== null && delivery.claimedUntil !== undefined && delivery.claimedUntil.getTime() > this.deps.clock().getTime();
  }

  /**
   * Like enqueue, but the first attempt is made now, here (the member waits for it: a reply to
   * `payment.completed` is shown to the payer when the first attempt brings one); later attempts go
   * through the queue. The app's reply when the first attempt was answered.
   */
  async sendNow(appId: string, event: string, payload: object, options: { retry: boolean; deliveryId?: string }): Promise<{ deliveryId: string; reply: unknown }> {
    const { delivery, recorded } = await this.record(appId, event, payload, options);
    // Recorded here, its first attempt held for this call; recorded before, as enqueue goes on with it.
    if (recorded) return { deliveryId: delivery._id, reply: (await this.attempt(delivery)).reply };
    if (this.held(delivery)) return { deliveryId: delivery._id, reply: null };
    const { reply } = await this.deliver({ deliveryId: delivery._id, attempt: delivery.attempts, round: delivery.round });
    return { deliveryId: delivery._id, reply };
  }

  /**
   * Arms again every pending delivery whose job should have run a minute ago and that no live worker
   * holds (its worker died mid-attempt, or its job was never queued): a new round, the held attempt
   * given back, a job queued now. The payments sweep runs it every 15 seconds. How many.
   */
  async sweepOverdue(): Promise<number> {
    const now = this.deps.clock();
    let armed = 0;
    for (const doc of await this.deps.repo.overdueDeliveries(new Date(now.getTime() - OVERDUE_MS), now, 500)) {
      const rearmed = await this.deps.repo.rearmDelivery(doc, now);
      if (!rearmed) continue;
      await this.deps.enqueue({ deliveryId: rearmed._id, attempt: rearmed.attempts, round: rearmed.round }, 0);
      armed++;
    }
    return armed;
  }

  /**
   * Records a delivery with its first attempt held (for the job or the call that makes it, see
   * enqueue): a crash before that attempt lets the hold lapse, and the sweep arms the delivery again.
   */
  private async record(appId: string, event: string, payload: object, options: { retry: boolean; deliveryId?: string }): Promise<{ delivery: DeliveryDoc; recorded: boolean }> {
    const now = this.deps.clock();
    const doc: DeliveryDoc = {
      _id: options.deliveryId ?? randomUUID(),
      appId,
      event,
      payload: JSON.stringify(payload),
      retry: options.retry,
      attempts: 1,
      round: 0,
      status: 'PENDING',
      nextAttemptAt: now,
      claimedUntil: new Date(now.getTime() + CLAIM_MS),
      createdAt: now,
      updatedAt: now,
    };
    // Recording the same delivery id again (an event sent again after a crash) keeps the first.
    return this.deps.repo.insertDelivery(doc);
  }

  /**
   * The delivery a job stands for, its attempt held for this worker; null when the job is stale (its
   * attempt and round no longer current). A first attempt's job that runs soon after the recording
   * has its hold from the recording and what it needs in its data: nothing is read. A job the queue
   * hands out again (`ranBefore`: its worker was lost, or stalled) may have made its attempt: it is
   * claimed like any other, and finds the attempt held (stale), as a dead worker's job always does.
   */
  private async claim(job: WebhookJob, now: number, ranBefore: boolean): Promise<DeliveryDoc | null> {
    const { repo } = this.deps;
    const { first } = job;
    // The claim is the read: only the job whose attempt and round are current goes on.
    // Held for the longest reply time an app may have and a margin: a worker that dies mid-attempt
    // lets the delivery go then, and the sweep (sweepOverdue) arms it again.
    if (!first || ranBefore) return repo.claimAttempt(job.deliveryId, job.attempt, job.round, new Date(now), CLAIM_MS);
    if (now - first.recordedAt >= FRESH_MS) return repo.renewClaim(job.deliveryId, job.attempt + 1, job.round, new Date(now), CLAIM_MS);
    const recordedAt = new Date(first.recordedAt);
    return {
      _id: job.deliveryId,
      appId: first.appId,
      event: first.event,
      payload: openSecret(this.deps.secretKey, first.sealed),
      retry: first.retry,
      attempts: job.attempt + 1,
      round: job.round,
      status: 'PENDING',
      nextAttemptAt: recordedAt,
      claimedUntil: new Date(first.recordedAt + CLAIM_MS),
      createdAt: recordedAt,
      updatedAt: recordedAt,
    };
  }

  /**
   * One attempt of a queued delivery (the worker's job). While the app's breaker is open, a payment
   * event is held (the attempt waits until the breaker's minute is over) rather than spent. A failed
   * retried attempt schedules the next one: the app's Retry-After when it gave one (1 s to 24 h), else
   * the schedule's step, with ±10 % jitter; after the last step the delivery is GAVE_UP.
   */
  async deliver(job: WebhookJob, { ranBefore = false }: { ranBefore?: boolean } = {}): Promise<{ status: DeliveryDoc['status'] | 'STALE'; reply: unknown }> {
    const claimed = await this.claim(job, this.deps.clock().getTime(), ranBefore);
    if (!claimed) return { status: 'STALE', reply: null };
    return this.attempt(claimed);
  }

  /** An attempt of a delivery held for this worker (`claimed`: as it stands with the attempt counted). */
  private async attempt(claimed: DeliveryDoc): Promise<{ status: DeliveryDoc['status']; reply: unknown }> {
    const { repo } = this.deps;
    const now = this.deps.clock().getTime();
    const delivery = claimed;
    const app = await repo.appCached(delivery.appId);
    if (!app) return { status: await this.finishDelivery(delivery, 'FAILED'), reply: null };
    if (delivery.retry && (await this.deps.gate.isOpen(app._id, now))) {
      // Held while the breaker is open: the attempt is given back and tried when its minute is over.
      const held = await repo.giveBackAttempt(claimed);
      if (held) await this.deps.enqueue({ deliveryId: delivery._id, attempt: held.attempts, round: held.round }, BREAKER_OPEN_MS);
      return { status: 'PENDING', reply: null };
    }
    // Cast: the payload was stored as JSON.stringify of an object by enqueue().
    const result = await this.call(app, delivery.event, JSON.parse(delivery.payload) as object, {
      deliveryId: delivery._id,
      waitWhenBusy: true,
      ...(delivery.retry ? { okStatus: (status: number) => status >= 200 && status < 300, jsonRequired: false, replyNote: paymentReplyRefusal } : {}),
    });
    if (!result.activity) {
      // Eight calls to this app are in flight: the delivery waits its turn in the queue, its attempt unspent.
      const waiting = await repo.giveBackAttempt(claimed);
      if (waiting) await this.deps.enqueue({ deliveryId: delivery._id, attempt: waiting.attempts, round: waiting.round }, 10 + Math.floor(Math.random() * 40));
      return { status: 'PENDING', reply: null };
    }
    if (result.activity.outcome === 'OK') return { status: await this.finishDelivery(claimed, 'DELIVERED'), reply: result.reply };
    if (!delivery.retry) return { status: await this.finishDelivery(claimed, 'FAILED'), reply: null };
    const step = this.deps.retrySchedule[claimed.attempts - 1];
    if (step === undefined) return { status: await this.finishDelivery(claimed, 'GAVE_UP'), reply: null };
    const seconds = result.retryAfterSeconds !== null ? Math.min(Math.max(result.retryAfterSeconds, 1), 86_400) : step * (0.9 + Math.random() * 0.2);
    const delayMs = Math.round(seconds * 1000);
    await repo.setNextAttempt(delivery._id, new Date(now + delayMs));
    await this.deps.enqueue({ deliveryId: delivery._id, attempt: claimed.attempts, round: claimed.round }, delayMs);
    return { status: 'PENDING', reply: null };
  }

  /** Sends a recorded delivery again with its original delivery id (the app deduplicates on it). */
  async replay(appId: string, deliveryId: string): Promise<boolean> {
    const now = this.deps.clock();
    const reset = await this.deps.repo.reopenDelivery(appId, deliveryId, now);
    if (!reset) return false;
    await this.deps.enqueue({ deliveryId, attempt: 0, round: reset.round }, 0);
    return true;
  }

  private async finishDelivery(delivery: DeliveryDoc, status: DeliveryDoc['status']): Promise<DeliveryDoc['status']> {
    await this.deps.repo.finishDelivery(delivery._id, status, this.deps.clock());
    return status;
  }

  /** Removes activity rows older than 30 days (spec, "Limits"), and finished deliveries as old; how many of each. */
  async deleteOldActivity(now: Date): Promise<{ activity: number; deliveries: number }> {
    const before = new Date(now.getTime() - ACTIVITY_KEPT_MS);
    return { activity: await this.deps.repo.deleteActivityBefore(before), deliveries: await this.deps.repo.deleteFinishedDeliveriesBefore(before) };
  }

  /** Whether the app's breaker is open now (its calls refused as BREAKER_OPEN). */
  breakerOpen(appId: string): Promise<boolean> {
    return this.deps.gate.isOpen(appId, this.deps.clock().getTime());
  }

  /** When the app's open breaker lets its next call through, or null when it is not open. */
  async breakerOpenUntil(appId: string): Promise<Date | null> {
    const until = await this.deps.gate.openUntil(appId, this.deps.clock().getTime());
    return until === null ? null : new Date(until);
  }

  /** The owner closes the breaker: the next call goes through at once. */
  closeBreaker(appId: string): Promise<void> {
    return this.deps.gate.close(appId);
  }

  /** A BREAKER_OPEN row's detail: nothing was sent, why, and when a call goes through again. */
  private async notSentWhileOpen(appId: string, nowMs: number): Promise<string> {
    const until = await this.deps.gate.openUntil(appId, nowMs);
    const when = until === null ? 'now' : `after ${new Date(until).toISOString()}`;
    return `Not sent: the breaker opened after ${BREAKER_FAILURES} failures within ${BREAKER_WINDOW_MS / 1000} s; the first call ${when} goes through and decides (the owner can close it from the console)`;
  }

  /** A signed ping to a URL the owner wants to use instead, recorded in the activity; the app's health is left as it is. */
  async pingCandidate(app: AppDoc, webhookUrl: string): Promise<CallResult> {
    return this.callPing({ ...app, webhookUrl });
  }

  private callPing(app: AppDoc): Promise<CallResult> {
    const ts = Math.floor(this.deps.clock().getTime() / 1000);
    return this.call(app, 'ping', { type: 'ping', ts }, { contractBreach: (reply) => (propertyOf(reply, 'type') === 'pong' ? null : 'type: expected "pong"') });
  }

  /**
   * A health check: a signed `{type: "ping", ts}`, answered `{type: "pong"}`. A pong marks the app UP;
   * two failed checks in a row mark it DOWN (a check refused for 8 calls in flight counts as neither).
   */
  async ping(app: AppDoc): Promise<CallResult> {
    const result = await this.callPing(app);
    // Without waitWhenBusy every call is recorded, so its activity is there.
    const activity = must(result.activity, 'the ping\'s activity row');
    const { repo } = this.deps;
    if (activity.outcome === 'OK') {
      await repo.updateApp(app._id, { $set: { health: 'UP', pingFailures: 0 } });
    } else if (activity.failure !== 'TOO_MANY_CONCURRENT') {
      const after = await repo.updateApp(app._id, { $inc: { pingFailures: 1 } });
      if (after && after.pingFailures >= 2 && after.health !== 'DOWN') await repo.updateApp(app._id, { $set: { health: 'DOWN' } });
    }
    return result;
  }

  /**
   * The scheduled health check (every 5 minutes, once across all workers): every app used in the last
   * 24 hours, PING_POOL at a time, so apps that hang for their whole timeout do not overrun the round.
   */
  async pingRecentlyUsed(): Promise<{ pinged: number; down: number }> {
    const since = new Date(this.deps.clock().getTime() - 24 * 3600 * 1000);
    const apps = await this.deps.repo.appsUsedSince(since);
    const limit = limiter(PING_POOL);
    await Promise.all(
      apps.map((app) =>
        limit(async () => {
          await this.ping(app);
        }),
      ),
    );
    return { pinged: apps.length, down: await this.deps.repo.countDownUsedSince(since) };
  }
}
