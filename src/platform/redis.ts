import { Redis, type RedisOptions } from 'ioredis';

/**
 * The client of request paths: a command waits at most `commandTimeoutMs` for its answer, and
 * commands queued while disconnected are failed after one reconnection attempt, so nothing waits or
 * queues without bound while Redis is away (DependencyHealth also stops sending while it is).
 * Commands sent in one turn of the event loop go out in one write (auto-pipelining): the requests
 * a group commit answers together publish their broadcasts together.
 */
export function connectRedis(url: string, options: { commandTimeoutMs: number; lazy?: boolean }): Redis {
  return new Redis(url, {
    lazyConnect: options.lazy ?? false,
    maxRetriesPerRequest: 1,
    commandTimeout: options.commandTimeoutMs,
    enableReadyCheck: true,
    enableAutoPipelining: true,
  });
}

/**
 * Another connection with `redis`'s options (and `overrides`); its connection errors are those `redis`
 * logs already. Not auto-pipelined: BullMQ's connections and subscribers are made here, and BullMQ
 * is known to misbehave with it (taskforcesh/bullmq#457).
 */
export function duplicate(redis: Redis, overrides: Partial<RedisOptions> = {}): Redis {
  // Its own first connection queues what is sent meanwhile, whatever the original does by now.
  const copy = redis.duplicate({ enableOfflineQueue: true, enableAutoPipelining: false, ...overrides });
  copy.on('error', () => undefined);
  return copy;
}

/** A connection of its own for BullMQ's workers: they block on Redis, so no command timeout, and retry forever (BullMQ needs it). */
export function blockingConnection(redis: Redis): Redis {
  return duplicate(redis, { maxRetriesPerRequest: null, commandTimeout: undefined });
}

/**
 * Socket.IO's emitter and adapter publish without waiting for the answer: a publish that fails
 * (Redis away) is logged here instead of ending the process as an unhandled rejection.
 */
export function keepPublishesHandled(redis: Redis, logger: { warn(object: object, message: string): void }): void {
  // Cast: ioredis's publish has overloads (callback forms); the one used here is (channel, message) → Promise<number>.
  const publish = redis.publish.bind(redis) as (channel: string, message: string) => Promise<number>;
  // Cast: the wrapper is that one overload of publish.
  redis.publish = ((channel: string, message: string) => {
    const sent = publish(channel, message);
    sent.catch((error: unknown) => logger.warn({ err: error }, 'a publish to Redis failed'));
    return sent;
  }) as Redis['publish'];
}

/** Closes a connection: QUIT when Redis takes it, otherwise at once (a QUIT refused or unanswered must not leave it reconnecting). */
export async function closeRedis(redis: Redis): Promise<void> {
  await redis.quit().catch(() => redis.disconnect());
}

export type { Redis };
