import { createHmac } from 'node:crypto';
import type { DeviceEvents } from '../platform/device-events.js';
import { publicBaseUrl } from '../platform/config.js';
import { must } from '../platform/must.js';
import { FollowUpTokens } from './invocations/follow-ups.js';
import type { Platform } from '../platform/platform.js';
import { QUEUES } from '../platform/queues.js';
import type { RoomsArea } from '../rooms/index.js';
import { AppsPolicy } from './apps.policy.js';
import { AppsRepo } from './apps.repo.js';
import { AdminAuditRepo } from '../platform/admin-audit.repo.js';
import { AppsService } from './console/console.service.js';
import { WebhooksService } from './delivery/webhooks.service.js';
import { CallGate } from './delivery/call-gate.js';
import { InstallsService } from './invocations/installs.service.js';
import { AppSigner } from './delivery/signing.js';
import { InvocationsService } from './invocations/invocations.service.js';
import { BotService } from './bot/bot.service.js';
import { AppPaymentsService } from './payments/payments.service.js';
import { AppApiService } from './payments/app-api.service.js';
import { AppMoneyRequestsRepo, AppPaymentsRepo } from './payments/payments.repo.js';
import { InstallsRepo } from './invocations/installs.repo.js';
import { InvocationsRepo } from './invocations/invocations.repo.js';
import { CURRENCIES, formatAmount, fromStored, type Currency, type WalletsArea } from '../wallets/index.js';
import type { BiometricService } from '../devices/index.js';
import { AppsErrors } from './apps.errors.js';
import type { MessagesArea } from '../messages/index.js';
import type { UserReads } from '../users/index.js';

/** The app platform: apps and their console, credentials, signed webhook calls and their activity (docs/apps/overview.md). */
export function appsArea(
  p: Platform,
  deps: { rooms: RoomsArea; messages: MessagesArea; users: UserReads; wallets: WalletsArea; biometric: BiometricService; events: DeviceEvents; isSiteAdmin: (userId: string) => Promise<boolean> },
) {
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
  const installsRepo = new InstallsRepo(p.db);
  const policy = new AppsPolicy({ repo, installs: installsRepo, rooms: deps.rooms.policy });
  const paymentsRepo = new AppPaymentsRepo(p.db);
  const apps = new AppsService({
    repo,
    policy,
    webhooks,
    rooms: deps.rooms.policy,
    isSiteAdmin: deps.isSiteAdmin,
    countInstalls: (appId) => installsRepo.countInstalls(appId),
    moneyWith: async (appId) => {
      const held: string[] = [];
      for (const currency of Object.keys(CURRENCIES) as Currency[]) {
        const account = await deps.wallets.balances.availableOf(`app:${appId}:${currency}`);
        if (account && fromStored(account.available) !== 0n) held.push(`it holds ${formatAmount(fromStored(account.available), currency)} ${currency}`);
      }
      const open = await paymentsRepo.openOfApp(appId);
      if (open > 0) held.push(`${open} payment${open === 1 ? ' is' : 's are'} open or being paid`);
      return held;
    },
    forgetInstalls: (appId, at) => installsRepo.removeAllOf(appId, at),
    audit: new AdminAuditRepo(p.db),
    secretKey,
    allowPrivate: p.config.WEBHOOK_ALLOW_PRIVATE,
    clock: p.clock,
  });
  const installs = new InstallsService(installsRepo, { repo, policy, rooms: deps.rooms.policy, clock: p.clock });
  const { ledger } = deps.wallets;
  const payments = new AppPaymentsService(paymentsRepo, {
    ledger,
    wallets: deps.wallets.wallets,
    biometric: deps.biometric,
    webhooks,
    clock: p.clock,
    crashAt: p.crashAt,
  });
  const invocations = new InvocationsService(new InvocationsRepo(p.db), {
    payments,
    repo,
    installs,
    webhooks,
    rooms: deps.rooms.policy,
    users: deps.users,
    geo: p.geo,
    postCard: (roomId, appId, card) => deps.messages.messages.postAppCard(roomId, appId, card),
    updateCard: (messageId, appId, card) => deps.messages.changes.updateAppCard(messageId, appId, card),
    followUps: {
      // Its own key, derived from the apps' secret key: a follow-up token signs nothing else.
      tokens: new FollowUpTokens(createHmac('sha256', secretKey).update('follow-up tokens').digest()),
      baseUrl: publicBaseUrl(p.config),
      countUse: async (invocationId, ttlMs) => {
        const key = p.keys.apps.followUpUses(invocationId);
        const [[, uses]] = must(await p.redis.multi().incr(key).pexpire(key, Math.max(1, ttlMs)).exec(), 'the count\'s transaction') as [[null, number]];
        return uses;
      },
    },
    tellMember: (userId, payload) => deps.events.toUsers([userId], 'app.follow-up', payload),
    formTtlMs: p.config.APPS_FORM_TTL * 1000,
    findCardMessage: async (principal, messageId) => {
      const { message } = await deps.messages.policy.forReader(principal, messageId);
      return { roomId: message.roomId, appId: message.appId ?? null, card: message.card ?? null };
    },
    clock: p.clock,
  });
  const bot = new BotService({
    apps,
    repo,
    postCard: (roomId, appId, card) => deps.messages.messages.postAppCard(roomId, appId, card),
    postText: (roomId, appId, text) => deps.messages.messages.postAppText(roomId, appId, text),
    countCard: async (credentialId) => {
      const hit = await p.ephemeral.hit(p.keys.apps.botCards(credentialId), p.config.BOT_CARDS_PER_MINUTE, 60);
      if (!hit.allowed) throw AppsErrors.TOO_MANY_BOT_CARDS({ retryAfter: hit.retryAfter });
    },
  });
  const appApi = new AppApiService(new AppMoneyRequestsRepo(p.db), {
    apps,
    payments,
    installs,
    wallets: deps.wallets.wallets,
    ledger,
    accountOf: (accountId) => deps.wallets.balances.availableOf(accountId),
    tellMember: async (userId, event) => {
      const app = await repo.findApp(event.appId);
      await deps.events.toUsers([userId], 'wallet.app-money-received', { ...event, appName: app?.name ?? 'An app' });
    },
    clock: p.clock,
  });
  /** A member's part in the app platform when they delete their account (docs/clients/people.md, "Deleting an account"). */
  const accounts = {
    /** What stops the deletion: an app of theirs holding money, a payment of theirs being paid. */
    async blockers(userId: string): Promise<string[]> {
      const found: string[] = [];
      for (const app of await repo.allAppsOf(userId)) {
        for (const currency of Object.keys(CURRENCIES) as Currency[]) {
          const account = await deps.wallets.balances.availableOf(`app:${app._id}:${currency}`);
          if (account && fromStored(account.available) !== 0n) found.push(`app ${app._id} holds ${currency}`);
        }
      }
      for (const id of await payments.repo.payingOf(userId)) found.push(`payment ${id} is not finished`);
      return found;
    },
    /** Their apps (never a secret) and their installs, for their data export. */
    async exportOf(userId: string) {
      return {
        owned: (await repo.allAppsOf(userId)).map((app) => ({ id: app._id, name: app.name, webhookUrl: app.webhookUrl, public: app.public, manifestVersion: app.manifestVersion, createdAt: app.createdAt.toISOString(), removedAt: app.removedAt?.toISOString() ?? null })),
        installed: (await installs.installs.installsOf(userId)).map((install) => ({ appId: install.appId, manifestVersion: install.manifestVersion, installedAt: install.installedAt.toISOString() })),
      };
    },
    /** Their apps removed for everyone, and the apps they installed uninstalled and their ids there forgotten. */
    async forget(userId: string): Promise<void> {
      const at = p.clock();
      for (const app of await repo.allAppsOf(userId)) await repo.removeApp(app._id, at);
      for (const install of await installs.installs.installsOf(userId)) {
        await installs.installs.removeInstall(install.appId, userId);
        await installs.installs.forget(install.appId, userId, at);
      }
    },
  };
  /** A site administrator's decision: the app leaves the directory (moderation). */
  const unlist = async (appId: string) => repo.unlist(appId, p.clock());
  return { repos: { apps: repo, appInstalls: installs.installs, appPayments: payments.repo }, policy, apps, webhooks, installs, invocations, bot, payments, appApi, accounts, unlist, signer: new AppSigner(p.config.APPS_SIGNING_KEY) };
}
export type AppsArea = ReturnType<typeof appsArea>;

// What other areas use of this one (they import only this file).
export type { WebhooksService } from './delivery/webhooks.service.js';
export type { InvocationsService } from './invocations/invocations.service.js';
