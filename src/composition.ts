import { attachmentsArea, attachmentsStore } from './attachments/index.js';
import { authArea } from './auth/index.js';
import { callsArea } from './calls/index.js';
import { chatStatusArea } from './chat-status/index.js';
import { e2eeArea } from './e2ee/index.js';
import { appsArea } from './apps/index.js';
import { walletsArea } from './wallets/index.js';
import { contactsArea } from './contacts/index.js';
import { biometricArea, devicesArea } from './devices/index.js';
import { inboxArea } from './inbox/index.js';
import { maintenanceArea } from './maintenance/index.js';
import { accountsArea } from './accounts/index.js';
import { moderationArea } from './moderation/index.js';
import { messagesArea } from './messages/index.js';
import type { Clock } from './platform/clock.js';
import type { Config } from './platform/config.js';
import type { Logger } from './platform/logger.js';
import { createPlatform, type Platform } from './platform/platform.js';
import { IdempotencyStore } from './platform/idempotency.js';
import { presenceArea, presenceStore } from './presence/index.js';
import { pushArea, pushReach } from './push/index.js';
import { roomsArea } from './rooms/index.js';
import { speechArea } from './speech/index.js';
import { summariesArea } from './summaries/index.js';
import { usersArea } from './users/index.js';

/**
 * The composition root: one factory call per area, in dependency order. Each factory names what it
 * takes; reactions across areas are registered by the areas themselves on the domain-event bus.
 */
async function composeAreas(p: Platform) {
  const users = usersArea(p);
  const devices = devicesArea(p);
  const presenceStores = presenceStore(p);
  const inbox = inboxArea(p, { presence: presenceStores.store, devices: devices.devices });
  const { events } = inbox;
  const isSiteAdmin = (userId: string) => users.users.isSiteAdmin(userId);
  const contacts = contactsArea(p, { users: users.reads, events });
  const auth = authArea(p, { users: users.signIn, devices: devices.sessions, devicesService: devices.devices, events });
  const biometric = biometricArea(p, { devices: devices.biometricKeys, users: users.reads, events });
  const rooms = roomsArea(p, { users: users.reads, isSiteAdmin, blocks: contacts.blockReads, blocker: contacts.blocks, connections: contacts.connectionReads, events });
  // Messages of encrypted rooms claim the encrypted uploads kept by the attachments store.
  const attachmentStore = attachmentsStore(p);
  const reach = pushReach(p, presenceStores.store);
  const messages = messagesArea(p, { rooms: rooms.reads, roomsPolicy: rooms.policy, users: users.reads, events, claimUploads: (input) => attachmentStore.encryptedClaims.claim(input), removeFiles: attachmentStore.forgetMessageFiles, mayNeedPush: reach.mayNeedPush });
  const attachments = attachmentsArea(p, { store: attachmentStore, messages: messages.messages, rooms: rooms.policy, tokens: auth.tokens, events });
  const speech = speechArea(p);
  const summaries = summariesArea(p, { messages: messages.reads, messagesPolicy: messages.policy, users: users.reads, events });
  const calls = callsArea(p, { users: users.reads, blocks: contacts.blockReads, connections: contacts.connectionReads, rooms: rooms.reads, members: rooms.membershipReads, roomsPolicy: rooms.policy, events });
  const presence = presenceArea(p, { store: presenceStores.store, devices: devices.devices, contacts: contacts.contacts, rooms: rooms.rooms, users: users.reads });
  const push = pushArea(p, {
    devices: devices.pushTokens,
    inbox: inbox.inbox,
    presence: presenceStores.store,
    messages: messages.reads,
    activity: messages.activityReads,
    rooms: rooms.reads,
    members: rooms.membershipReads,
    blocks: contacts.blockReads,
    users: users.reads,
    reach: reach.reach,
  });
  const wallets = walletsArea(p, {
    users: users.reads,
    devices: devices.reads,
    biometric: biometric.biometric,
    events,
    isSiteAdmin,
  });
  const chatStatus = chatStatusArea({ rooms: rooms.reads, members: rooms.membershipReads, activity: messages.activityReads, roomCalls: calls.roomCallReads, clock: p.clock });
  const e2ee = e2eeArea(p, { rooms: rooms.reads, members: rooms.membershipReads, roomsPolicy: rooms.policy, events, attachments: attachmentStore.encryptedUploads });
  const apps = appsArea(p, { rooms, messages, users: users.reads, wallets, biometric: biometric.biometric, events, isSiteAdmin });
  const moderation = moderationArea(p, { users: users.suspensions, isSiteAdmin, devices: devices.devices, messages, rooms, apps, blocks: contacts.blocks, events });
  const accounts = accountsArea(p, { users, devices, contacts, rooms, e2ee, apps, wallets, messages, attachments, moderation, auth, tokens: auth.tokens, events });
  const maintenance = maintenanceArea(p, { auth: auth.auth, calls: calls.anyCall, encryptedUploads: e2ee.uploads, webhooks: apps.webhooks, invocations: apps.invocations, messages: messages.changes });

  const repos = { ...users.repos, ...devices.repos, ...contacts.repos, ...auth.repos, ...rooms.repos, ...messages.repos, ...attachments.repos, ...calls.repos, ...wallets.repos, ...e2ee.repos, ...apps.repos, ...accounts.repos, ...moderation.repos };
  await Promise.all(Object.values(repos).map((repo) => repo.ensureIndexes()));
  return {
    services: {
      ops: { health: (timeoutMs: number) => p.health(timeoutMs), dependencies: p.dependencies, smsRefusals: () => p.smsGuard.refusals, ledgerWritten: () => wallets.ledger.written },
      idempotency: new IdempotencyStore(p.redis, p.keys, p.config.IDEMPOTENCY_LEASE_SECONDS),
      geo: { locate: (ip: string) => p.geo.locate(ip) },
      users: users.users,
      avatars: users.avatars,
      devices: devices.devices,
      auth: auth.auth,
      webSessions: auth.webSessions,
      biometric: biometric.biometric,
      contacts: contacts.contacts,
      blocks: contacts.blocks,
      inbox: inbox.inbox,
      presence: presence.presence,
      presenceStore: presenceStores.store,
      rooms: rooms.rooms,
      roomInvitations: rooms.invitations,
      messages: messages.messages,
      messageReading: messages.reading,
      messageChanges: messages.changes,
      reactions: messages.reactions,
      chatStatus: chatStatus.chatStatus,
      keyDirectory: e2ee.keyDirectory,
      roomKeys: e2ee.roomKeys,
      encryptedUploads: e2ee.uploads,
      apps: apps.apps,
      appWebhooks: apps.webhooks,
      appInstalls: apps.installs,
      appSigner: apps.signer,
      appInvocations: apps.invocations,
      bot: apps.bot,
      appPayments: apps.payments,
      appApi: apps.appApi,
      wallets: wallets.wallets,
      walletTransfers: wallets.transfers,
      withdrawals: wallets.withdrawals,
      deposits: wallets.deposits,
      swaps: wallets.swaps,
      paymentRequests: wallets.paymentRequests,
      walletLimits: wallets.limits,
      walletsReconciler: wallets.reconciler,
      exchangeRates: { current: wallets.rates },
      attachments: attachments.attachments,
      media: attachments.media,
      speech: speech.speech,
      summaries: summaries.summaries,
      calls: calls.calls,
      roomCalls: calls.roomCalls,
      anyCall: calls.anyCall,
      ice: calls.ice,
      push: push.push,
      messagePush: push.messagePush,
      maintenance: maintenance.maintenance,
      accounts: accounts.accounts,
      accountExports: accounts.exports,
      moderation: moderation.moderation,
    },
    repos,
    events,
    // What waits to be written goes before the connections close.
    close: async () => {
      await messages.flushReadMarks();
      await push.close();
    },
  };
}

type Areas = Awaited<ReturnType<typeof composeAreas>>;
/** What the adapters (routes, socket handlers, job processors) receive: services, never repos or connections. */
export type Services = Areas['services'];
/** Repositories, for tests and seeding scripts only. */
export type Repos = Areas['repos'];

/** A process's platform and, unless it needs no database (an sfu-only node), every area's services. */
export interface AppContext {
  platform: Platform;
  services: Services;
  repos: Repos;
  events: Areas['events'];
  close(): Promise<void>;
}

export async function createContext(config: Config, logger: Logger, options: { clock?: Clock; monitorCommands?: boolean } = {}): Promise<AppContext> {
  const platform = await createPlatform(config, logger, options);
  const areas = await composeAreas(platform);
  return {
    platform,
    ...areas,
    async close() {
      await areas.close();
      await platform.close();
    },
  };
}
