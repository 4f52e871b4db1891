/**
 * Every Redis key and channel this service writes, in one place: each is the deployment's
 * `REDIS_PREFIX` followed by a fixed name, so several deployments (or test files) share one Redis.
 *
 * On a Redis Cluster the keys one command, transaction or script touches together must live in one
 * slot: they share a hash tag, the `{...}` part Redis hashes instead of the whole key (a device's
 * inbox and its presence `{dev:ID}`, a hub node's heartbeats `{node:ID}`, an app's breaker `{app:ID}`,
 * the SFU's registry `{sfu}`, each queue's keys `{q:NAME}`, a room's push reach `{room:ID}`). `REDIS_PREFIX` holds no braces, so a
 * key's first tag is always one of these.
 */
export function keyspace(prefix: string) {
  const device = (deviceId: string) => `{dev:${deviceId}}`;
  const node = (nodeId: string) => `{node:${nodeId}}`;
  const app = (appId: string) => `{app:${appId}}`;
  return {
    prefix,
    /** The channel prefix of the hubs' sharded socket.io adapter and of the emitter (ShardedEmitter). */
    socketIo: `${prefix}socket.io`,
    /** BullMQ's key prefix for one queue: each queue's keys in one slot of their own, so queues spread over a cluster's masters. */
    queuePrefix: (queue: string) => `${prefix}{q:${queue}}`,
    /** Sharded pub/sub channel on which one hub node hears that a device it holds has something new in its inbox. */
    hubPokes: (nodeId: string) => `${prefix}poke:${node(nodeId)}`,
    /** Texts sent in one hour (its number since 1970) to one scope: global, country:XX, prefix:NNNNNN. */
    /** In one slot (`{sms}`): a text counts against its three budgets in one transaction. */
    smsBudget: (scope: string, hour: number) => `${prefix}sms-budget:{sms}:${scope}:${hour}`,
    /** The devices a message's push was delivered to (a hash, one per message and kind): a part's job run again skips them. */
    pushDelivered: (messageId: string, replacement: boolean) => `${prefix}push:delivered:${messageId}${replacement ? ':replacement' : ''}`,
    inboxMeta: (deviceId: string) => `${prefix}inbox:meta:${device(deviceId)}`,
    inboxEvents: (deviceId: string) => `${prefix}inbox:events:${device(deviceId)}`,
    /** Pub/sub channel of the shared caches' clearings. */
    cacheInvalidation: `${prefix}cache:invalidate`,
    presence: {
      node: (nodeId: string) => `${prefix}presence:node:${node(nodeId)}`,
      nodeLast: (nodeId: string) => `${prefix}presence:node-last:${node(nodeId)}`,
      /** In the device's slot, beside its inbox: an event's append and the read of who holds the device go to one server. */
      deviceNodes: (deviceId: string) => `${prefix}presence:nodes:${device(deviceId)}`,
      seen: (deviceId: string) => `${prefix}presence:seen:${device(deviceId)}`,
    },
    sfu: {
      nodes: `${prefix}sfu:nodes:{sfu}`,
      node: (nodeId: string) => `${prefix}sfu:node:{sfu}:${nodeId}`,
      /** The room calls under way: call id → the id of the node holding its media. */
      calls: `${prefix}sfu:calls:{sfu}`,
      /** Calls whose media a node lost (its mediasoup worker died), for the worker role to end. */
      failedCalls: `${prefix}sfu:failed-calls:{sfu}`,
    },
    auth: {
      codeRequests: (phone: string) => `${prefix}rl:login-code:${phone}`,
      /** Code requests or sign-in attempts from one client address or network. */
      fromAddress: (kind: 'codes' | 'attempts', scope: 'address' | 'network', value: string) => `${prefix}rl:signin-${kind}:${scope}:${value}`,
      twoFactorTries: (attemptId: string) => `${prefix}rl:2fa:${attemptId}`,
      twoFactorUsed: (attemptId: string) => `${prefix}2fa-used:${attemptId}`,
      /** A console browser session (by the hash of its cookie), and what it keeps to show once. */
      webSession: (id: string) => `${prefix}web-session:${id}`,
      webShown: (id: string, shownId: string) => `${prefix}web-shown:${id}:${shownId}`,
    },
    push: {
      /** Who a room's new message could be pushed to (PushReachStore), and its version, in the room's slot (`{room:ID}`). */
      reach: (roomId: string) => `${prefix}push:reach:{room:${roomId}}`,
      reachVersion: (roomId: string) => `${prefix}push:reach-version:{room:${roomId}}`,
    },
    users: {
      /** Wrong authenticator codes on two-factor enable and disable, per account. */
      twoFactorWrong: (userId: string) => `${prefix}rl:2fa-change:${userId}`,
    },
    wallets: {
      /** Held while a withdrawal's transaction is signed and broadcast: the hot wallet's nonces go in order. */
      hotWalletLock: `${prefix}wallets:hot-wallet-lock`,
    },
    /** A caller's Idempotency-Key (hashed): the request under way, or its stored answer. */
    idempotency: (userId: string, keyHash: string) => `${prefix}idem:${userId}:${keyHash}`,
    apps: {
      /** When the app's breaker opened (absent: closed); the probe's claim; failures of the last minute; calls in flight. */
      breakerOpen: (appId: string) => `${prefix}apps:breaker:open:${app(appId)}`,
      breakerProbe: (appId: string) => `${prefix}apps:breaker:probe:${app(appId)}`,
      breakerFailures: (appId: string) => `${prefix}apps:breaker:failures:${app(appId)}`,
      inflight: (appId: string) => `${prefix}apps:inflight:${app(appId)}`,
      /** Cards a bot token posted this minute. */
      botCards: (credentialId: string) => `${prefix}rl:bot-cards:${credentialId}`,
      /** Answers sent through one invocation's follow-up URL (a deferred answer's), counted. */
      followUpUses: (invocationId: string) => `${prefix}apps:follow-up-uses:${invocationId}`,
    },
    e2ee: {
      /** Per-device windows of key calls (share uploads, key requests) and of encrypted uploads. */
      keyCalls: (deviceId: string) => `${prefix}rl:e2ee-keys:${deviceId}`,
      uploads: (deviceId: string) => `${prefix}rl:e2ee-uploads:${deviceId}`,
    },
    rooms: {
      /** Invitations a member sent this hour to people they are not connected to (every room counts). */
      invitesBy: (inviterId: string) => `${prefix}rl:room-invites:${inviterId}`,
    },
    /** Slots of count-then-act limits taken by requests under way (platform/limits.ts): what, and whose. */
    slots: (limit: 'invitations-waiting' | 'wallets' | 'processing' | 'message-request', id: string) => `${prefix}slots:${limit}:${id}`,
    contacts: {
      /** Connection requests by phone or e-mail a member made this hour, and today. */
      invitesBy: (userId: string, window: 'hour' | 'day') => `${prefix}rl:contact-invites:${window}:${userId}`,
    },
    moderation: {
      /** Reports a member made this hour. */
      reports: (userId: string) => `${prefix}rl:reports:${userId}`,
    },
    accounts: {
      /** The hash of the code texted to confirm an account's deletion (one at a time), and its wrong entries. */
      deletionCode: (userId: string) => `${prefix}account:deletion-code:${userId}`,
      deletionWrong: (userId: string) => `${prefix}rl:account-deletion-wrong:${userId}`,
    },
    biometric: {
      nonce: (nonce: string) => `${prefix}bio:nonce:${nonce}`,
      code: (deviceId: string) => `${prefix}bio:code:${deviceId}`,
      codesSent: (phone: string) => `${prefix}bio:code-sent:${phone}`,
      wrongCodes: (phone: string) => `${prefix}bio:code-wrong:${phone}`,
    },
  } as const;
}

export type Keyspace = ReturnType<typeof keyspace>;
