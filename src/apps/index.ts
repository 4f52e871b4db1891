import type { Platform } from '../platform/platform.js';
import { QUEUES } from '../platform/queues.js';
import type { RoomsArea } from '../rooms/index.js';
import { AppsRepo } from './apps.repo.js';
import { AppsService } from './apps.service.js';
import { WebhooksService } from './webhooks.service.js';
import { CallGate } from './call-gate.js';
import { InstallsService } from './installs.service.js';
import { AppSigner } from './signing.js';

/** The app platform: apps and their console, credentials, signed webhook calls and their activity (README, "App platform"). */
export function appsArea(p: Platform, deps: { rooms: RoomsArea; isSiteAdmin: (userId: string) => Promise<boolean> }) {
  const repo = new AppsRepo(p.db, p.cache);
  const secretKey = Buffer.from(p.config.APPS_SECRET_KEY, 'base64');
  const webhooks = new WebhooksService({
    repo,
    gate: new CallGate(p.redis, p.keys),
    enqueue: (job, delayMs) => p.queues.add(QUEUES.webhooks, job, { delayMs }),
    retrySchedule: p.config.WEBHOOK_RETRY_SCHEDULE,
    secretKey,
    allowPrivate: p.config.WEBHOOK_ALLOW_PRIVATE,
    dnsServer: p.config.WEBHOOK_DNS_SERVER,
    clock: p.clock,
  });
  const apps = new AppsService({ repo, webhooks, rooms: deps.rooms.policy, isSiteAdmin: deps.isSiteAdmin, secretKey, allowPrivate: p.config.WEBHOOK_ALLOW_PRIVATE, clock: p.clock });
  const installs = new InstallsService(p.db, { repo, clock: p.clock });
  return { repos: { apps: repo, appInstalls: installs }, apps, webhooks, installs, signer: new AppSigner(p.config.APPS_SIGNING_KEY) };
}
export type AppsArea = ReturnType<typeof appsArea>;
