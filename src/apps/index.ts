import type { Platform } from '../platform/platform.js';
import { QUEUES } from '../platform/queues.js';
import type { RoomsArea } from '../rooms/index.js';
import { AppsRepo } from './apps.repo.js';
import { AppsService } from './apps.service.js';
import { WebhooksService } from './webhooks.service.js';
import { CallGate } from './call-gate.js';
import { InstallsService } from './installs.service.js';

/** The app platform: apps and their console, credentials, signed webhook calls and their activity (README, "App platform"). */
export function appsArea(p: Platform, deps: { rooms: RoomsArea }) {
  const repo = new AppsRepo(p.db);
  const secretKey = Buffer.from(p.config.APPS_SECRET_KEY, 'base64');
  const webhooks = new WebhooksService({
    repo,
    gate: new CallGate(p.redis, p.keys),
    enqueue: (job, delayMs) => p.queues.add(QUEUES.webhooks, job, { delayMs }),
    retrySchedule: p.config.WEBHOOK_RETRY_SCHEDULE,
    secretKey, allowPrivate: p.config.WEBHOOK_ALLOW_PRIVATE, clock: p.clock });
  const apps = new AppsService({ repo, webhooks, rooms: deps.rooms.policy, secretKey, allowPrivate: p.config.WEBHOOK_ALLOW_PRIVATE, clock: p.clock });
  const installs = new InstallsService(p.db, { repo, clock: p.clock });
  return { repos: { apps: repo, appInstalls: installs }, apps, webhooks, installs };
}
export type AppsArea = ReturnType<typeof appsArea>;
