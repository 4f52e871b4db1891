import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';

/**
 * One Redis role's client: a single server, or a Redis Cluster (docs/operators/scaling.md, "Redis
 * by role"). Both take the same commands; on a cluster every multi-key command keeps its keys in
 * one slot (the keyspace's hash tags).
 */
export type RedisClient = Redis | Cluster;

/** Where a role's Redis is: one server's URL, or a cluster's seed nodes. */
export type RedisTarget =
  | { kind: 'server'; url: string }
  | { kind: 'cluster'; nodes: { host: string; port: number }[]; username?: string; password?: string; tls: boolean };

/**
 * `redis://` and `rediss://` name one server; `redis-cluster://[user:pass@]host:port,host:port` (or
 * `rediss-cluster://`) names a cluster by some of its nodes (ioredis finds the rest).
 */
export function redisTarget(url: string): RedisTarget {
  const cluster = /^(rediss?)-cluster:\/\/(?:([^:@/]*):([^@/]*)@)?([^/?#]+)\/?$/.exec(url);
  if (!cluster) return { kind: 'server', url };
  // `!`: the pattern's host list is not optional.
  const nodes = cluster[4]!.split(',').map((hostPort) => {
    const at = hostPort.lastIndexOf(':');
    return { host: hostPort.slice(0, at), port: Number(hostPort.slice(at + 1)) };
  });
  return {
    kind: 'cluster',
    nodes,
    ...(cluster[2] ? { username: decodeURIComponent(cluster[2]) } : {}),
    ...(cluster[3] ? { password: decodeURIComponent(cluster[3]) } : {}),
    tls: cluster[1] === 'rediss',
  };
}

/** The pattern config checks a Redis URL against (one server, or a cluster's seed nodes). */
export const REDIS_URL_PATTERN = /^(rediss?:\/\/|rediss?-cluster:\/\/(?:[^:@/]*:[^@/]*@)?[^:,/]+:\d+(,[^:,/]+:\d+)*\/?$)/;

/**
 * The client of request paths: a command waits at most `commandTimeoutMs` for its answer, and
 * commands queued while disconnected are failed after one reconnection attempt, so nothing waits or
 * queues without bound while Redis is away (DependencyHealth also stops sending while it is).
 * Commands sent in one turn of the event loop go out in one write per server (auto-pipelining): the
 * requests a group commit answers together publish their broadcasts together.
 */
export function connectRedis(url: string, options: { commandTimeoutMs: number; lazy?: boolean }): RedisClient {
  const common = { maxRetriesPerRequest: 1, commandTimeout: options.commandTimeoutMs, enableReadyCheck: true } satisfies RedisOptions;
  const target = redisTarget(url);
  if (target.kind === 'server') return new Redis(url, { ...common, lazyConnect: options.lazy ?? false, enableAutoPipelining: true });
  const clusterOptions: ClusterOptions = {
    lazyConnect: options.lazy ?? false,
    enableAutoPipelining: true,
    enableReadyCheck: true,
    // Sharded pub/sub (SSUBSCRIBE) goes to the shard that owns the channel, and follows it when a replica takes over.
    shardedSubscribers: true,
    // A master that dies is replaced by its replica within a few node timeouts: its commands are
    // retried meanwhile (16 tries, 300 ms apart: nearly 5 s), with the map of slots read again, rather
    // than failed (a broadcast nobody awaits would otherwise be lost).
    retryDelayOnFailover: 300,
    retryDelayOnClusterDown: 300,
    slotsRefreshInterval: 2_000,
    redisOptions: { ...common, ...(target.username ? { username: target.username } : {}), ...(target.password ? { password: target.password } : {}), ...(target.tls ? { tls: {} } : {}) },
  };
  return endingSlotsRefresh(new Cluster(target.nodes, clusterOptions));
}

/**
 * Another connection with `redis`'s options (and `overrides`); its connection errors are those `redis`
 * logs already. Not auto-pipelined: BullMQ's connections and subscribers are made here, and BullMQ
 * is known to misbehave with it (taskforcesh/bullmq#457).
 */
export function duplicate(redis: RedisClient, overrides: Partial<RedisOptions> = {}): RedisClient {
  // Its own first connection queues what is sent meanwhile, whatever the original does by now.
  const copy =
    redis instanceof Cluster
      ? redis.duplicate(undefined, { ...redis.options, enableOfflineQueue: true, enableAutoPipelining: false, redisOptions: { ...redis.options.redisOptions, ...overrides } })
      : redis.duplicate({ enableOfflineQueue: true, enableAutoPipelining: false, ...overrides });
  copy.on('error', () => undefined);
  return copy instanceof Cluster ? endingSlotsRefresh(copy) : copy;
}

/** A connection of its own for BullMQ's workers: they block on Redis, so no command timeout, and retry forever (BullMQ needs it). */
export function blockingConnection(redis: RedisClient): RedisClient {
  return duplicate(redis, { maxRetriesPerRequest: null, commandTimeout: undefined });
}

/**
 * Publishes that no one awaits (the adapter's, the emitter's, the pokes') are logged here when they
 * fail (Redis away) instead of ending the process as an unhandled rejection.
 */
export function keepPublishesHandled(redis: RedisClient, logger: { warn(object: object, message: string): void }): void {
  for (const name of ['publish', 'spublish'] as const) {
    // Cast: ioredis's publish commands have overloads (callback forms); the one used here is (channel, message) → Promise<number>.
    const send = redis[name].bind(redis) as (channel: string, message: string | Buffer) => Promise<number>;
    // Cast: the wrapper is that one overload.
    redis[name] = ((channel: string, message: string | Buffer) => {
      const sent = send(channel, message);
      sent.catch((error: unknown) => logger.warn({ err: error }, `a ${name} to Redis failed`));
      return sent;
    }) as Redis['publish'];
  }
}

/** Closes a connection: QUIT when Redis takes it, otherwise at once (a QUIT refused or unanswered must not leave it reconnecting). */
export async function closeRedis(redis: RedisClient): Promise<void> {
  await redis.quit().catch(() => redis.disconnect());
}

/**
 * ioredis (6.0) re-arms its slots-refresh timer (slotsRefreshInterval) from the callback of every
 * refresh, and a refresh of a closed client calls back too: a client closed while a refresh was under
 * way kept its process alive with a 2-second timer for ever (a test file that never exited, seen once
 * in the cluster pass). Once the client has ended (however it was closed: closeRedis, or BullMQ
 * closing its own connections), a refresh does nothing and does not call back, which ends the chain
 * (at most one more timer, already armed, fires). Every cluster client is made here, so each gets it.
 */
function endingSlotsRefresh(cluster: Cluster): Cluster {
  cluster.once('end', () => {
    // Cast: an instance property shadowing ioredis's method (checked by redis-cluster.test).
    (cluster as unknown as { refreshSlotsCache: () => void }).refreshSlotsCache = () => undefined;
  });
  return cluster;
}


/** ioredis's sharded subscribers of a cluster (not in its typings): one per master, `idle` where no channel lives. */
type ShardedSubscriberGroup = { shardedSubscribers: Map<string, { subscriberStatus: string; getInstance(): Redis | null }> };

/** Whether Redis answers on `redis` after what it was sent: its commands (a resubscription) were processed. */
async function answers(redis: Redis): Promise<boolean> {
  // A command queued before the connection was ready would go out before the 'ready' listeners' resubscription.
  if (redis.status !== 'ready') await new Promise((resolve) => redis.once('ready', resolve));
  return redis.ping().then(
    () => true,
    () => false,
  );
}

/** Whether every subscriber connection of `client` is up, its subscriptions sent again and confirmed by Redis. */
async function subscribersAnswer(client: RedisClient): Promise<boolean> {
  if (!(client instanceof Cluster)) return answers(client);
  // Cast: the group is ioredis's (6.x) and not in its typings; checked by the cluster suites' failover and restore tests.
  const group = (client as unknown as { shardedSubscribers?: ShardedSubscriberGroup }).shardedSubscribers;
  if (!group) return false;
  const subscribers = [...group.shardedSubscribers.values()];
  // A subscriber neither idle (no channel on its master) nor connected is still being replaced.
  if (subscribers.some((subscriber) => !['idle', 'connected'].includes(subscriber.subscriberStatus))) return false;
  const connected = subscribers.filter((subscriber) => subscriber.subscriberStatus === 'connected').map((subscriber) => subscriber.getInstance());
  if (connected.some((instance) => instance === null)) return false;
  return (await Promise.all(connected.map((instance) => answers(instance!)))).every(Boolean);
}

/**
 * Calls `restored` each time the subscriptions of `client` are back after they lapsed (Redis restarted,
 * the connection dropped, a cluster master failed over): what was published meanwhile reached no one,
 * and the caller makes it up. Called once Redis has confirmed the resubscription on every subscriber
 * connection, so nothing published after the call is missed; `since` is when the lapse was noticed.
 */
export function onSubscriptionsRestored(client: RedisClient, restored: (since: Date) => void): void {
  let lapsedSince: Date | undefined;
  let lapses = 0;
  const lapsed = () => {
    lapses++;
    lapsedSince ??= new Date();
  };
  const check = async () => {
    if (!lapsedSince) return;
    const seen = lapses;
    // Not back yet (a replaced subscriber still connecting): a later 'ready' or 'subscribersReady' checks again.
    if (!(await subscribersAnswer(client)) || seen !== lapses || !lapsedSince) return;
    const since = lapsedSince;
    lapsedSince = undefined;
    restored(since);
  };
  if (client instanceof Cluster) {
    client.on('-subscriber', lapsed);
    client.on('subscribersReady', () => void check());
  } else {
    client.on('close', lapsed);
    client.on('ready', () => void check());
  }
}
