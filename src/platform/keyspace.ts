/**
 * Every Redis key and channel this service writes, in one place: each is the deployment's
 * `REDIS_PREFIX` followed by a fixed name, so several deployments (or test files) share one Redis.
 */
export function keyspace(prefix: string) {
  return {
    prefix,
    /** The key prefix the hubs' socket.io Redis adapter and every emitter share. */
    socketIo: `${prefix}socket.io`,
    /** BullMQ's key prefix for this deployment's queues. */
    queues: `${prefix}bull`,
    /** Pub/sub channel on which hub nodes hear that a device's inbox has something new. */
    inboxPoke: `${prefix}inbox:poke`,
    /** Texts sent in one hour (its number since 1970) to one scope: global, country:XX, prefix:NNNNNN. */
    smsBudget: (scope: string, hour: number) => `${prefix}sms-budget:${scope}:${hour}`,
    inboxMeta: (deviceId: string) => `${prefix}inbox:meta:${deviceId}`,
    inboxEvents: (deviceId: string) => `${prefix}inbox:events:${deviceId}`,
    /** Pub/sub channel of the shared caches' clearings. */
    cacheInvalidation: `${prefix}cache:invalidate`,
    presence: {
      /** Prefix of the nodes' heartbeat keys (the Lua check appends the node id). */
      nodePrefix: `${prefix}presence:node:`,
      node: (nodeId: string) => `${prefix}presence:node:${nodeId}`,
      nodeLast: (nodeId: string) => `${prefix}presence:node-last:${nodeId}`,
      deviceNodes: (deviceId: string) => `${prefix}presence:nodes:${deviceId}`,
      seen: (deviceId: string) => `${prefix}presence:seen:${deviceId}`,
    },
    sfu: {
      nodes: `${prefix}sfu:nodes`,
      node: (nodeId: string) => `${prefix}sfu:node:${nodeId}`,
    },
    auth: {
      codeRequests: (phone: string) => `${prefix}rl:login-code:${phone}`,
      /** Code requests or sign-in attempts from one client address or network. */
      fromAddress: (kind: 'codes' | 'attempts', scope: 'address' | 'network', value: string) => `${prefix}rl:signin-${kind}:${scope}:${value}`,
      twoFactorTries: (attemptId: string) => `${prefix}rl:2fa:${attemptId}`,
      twoFactorUsed: (attemptId: string) => `${prefix}2fa-used:${attemptId}`,
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
      breakerOpen: (appId: string) => `${prefix}apps:breaker:open:${appId}`,
      breakerProbe: (appId: string) => `${prefix}apps:breaker:probe:${appId}`,
      breakerFailures: (appId: string) => `${prefix}apps:breaker:failures:${appId}`,
      inflight: (appId: string) => `${prefix}apps:inflight:${appId}`,
      /** Cards a bot token posted this minute. */
      botCards: (credentialId: string) => `${prefix}rl:bot-cards:${credentialId}`,
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
