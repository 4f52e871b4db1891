import type { Job } from 'bullmq';
import type { WebhooksService } from '../../src/apps/delivery/webhooks.service.js';
import type { AppPaymentsService } from '../../src/apps/payments/payments.service.js';
import type { WebhookJob } from '../../src/platform/queues.js';

/** Pings every app used in the last 24 hours; two failed checks in a row mark an app DOWN (WebhooksService.ping). */
export function appHealthProcessor(webhooks: WebhooksService) {
  return async () => webhooks.pingRecentlyUsed();
}

/**
 * One attempt of a queued webhook delivery; the service schedules any next attempt. A job BullMQ hands
 * out again after its worker was lost (its stalled count) may have made its attempt already.
 */
export function webhookProcessor(webhooks: WebhooksService) {
  return async (job: Job<WebhookJob>) => webhooks.deliver(job.data, { ranBefore: job.stalledCounter > 0 });
}

/** Expires in-chat payments past their time and finishes those a crash interrupted. */
export function appPaymentsProcessor(payments: AppPaymentsService) {
  return async () => payments.sweep();
}
