import type { Db, MongoClient } from 'mongodb';
import { CacheBus } from './cache/invalidation.js';
import { systemClock, type Clock } from './clock.js';
import type { Config } from './config.js';
import { DomainEvents } from './domain-events.js';
import { CodeHasher } from './code-hash.js';
import { crashAt, type CrashAt } from './crash-points.js';
import { EphemeralStore } from './ephemeral.js';
import { GeoipLiteLocator, type GeoLocator } from './geoip.js';
import { keyspace, type Keyspace } from './keyspace.js';
import type { Logger } from './logger.js';
import { connectMongo } from './mongo.js';
import { Queues } from './queues.js';
import { closeRedis, connectRedis, keepPublishesHandled, type RedisClient } from './redis.js';
import { DependencyHealth } from './dependencies.js';
import { emailProvider } from './email/index.js';
import type { EmailProvider } from './email/email.js';
import { smsPolicy, smsProvider } from './sms/index.js';
import { SmsGuard } from './sms/sms-guard.js';
import type { SmsProvider } from './sms/sms.js';
import { blobStorage } from './storage/index.js';
import type { BlobStorage } from './storage/storage.js';

/** What every area shares: connections, keys, queues, caches, the clock and the domain-event bus. */
export interface Platform {
  config: Config;
  logger: Logger;
  clock: Clock;
  keys: Keyspace;
  /** The state role's Redis (inboxes, presence, limits, idempotency): REDIS_URL. */
  redis: RedisClient;
  /** The pub/sub role's Redis (REDIS_PUBSUB_URL, else the state's client): publishes; subscribers are its duplicates. */
  pubsub: RedisClient;
  /** Whether MongoDB and Redis answer; requests are refused at once while either is away. */
  dependencies: DependencyHealth;
  ephemeral: EphemeralStore;
  /** Hashes of short secrets (SMS codes), at the configured argon2id cost. */
  codes: CodeHasher;
  /** Where texts may go and the hourly budgets they spend (sign-in abuse). */
  smsGuard: SmsGuard;
  cache: CacheBus;
  domainEvents: DomainEvents;
  queues: Queues;
  /** Where a chaos test has this process die (CRASH_AT); does nothing elsewhere. */
  crashAt: CrashAt;
  /** The database; a process that asked for none (an sfu-only node) throws on use. */
  readonly db: Db;
  readonly storage: BlobStorage;
  readonly sms: SmsProvider;
  readonly email: EmailProvider;
  readonly geo: GeoLocator;
  /** Pings the database and Redis, each bounded. */
  health(timeoutMs: number): Promise<{ mongodb: 'ok' | 'down'; redis: 'ok' | 'down' }>;
  close(): Promise<void>;
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  return Promise.race([promise, new Promise<T>((_, reject) => setTimeout(() => reject(new Error('timeout')), ms).unref())]);
}

/** Made once on first use, so a role that never needs an adapter never builds it. */
export function once<T>(make: () => T): () => T {
  let value: T | undefined;
  return () => (value ??= make());
}

/**
 * Connects what a process needs: Redis always, the database unless `database` is false. Adapters
 * to outside services (storage, SMS, e-mail, geolocation) are built on first use.
 */
export async function createPlatform(config: Config, logger: Logger, options: { database?: boolean; clock?: Clock; monitorCommands?: boolean } = {}): Promise<Platform> {
  const dependencies = new DependencyHealth(logger, config.DEPENDENCY_TIMEOUT_MS, config.DEPENDENCY_PROBE_MS);
  let mongo: MongoClient | null = null;
  let db: Db | null = null;
  if (options.database ?? true) {
    ({ client: mongo, db } = await connectMongo(config.MONGODB_URL, config.MONGODB_DB, { timeoutMs: config.DEPENDENCY_TIMEOUT_MS, probeMs: config.DEPENDENCY_PROBE_MS, monitorCommands: options.monitorCommands ?? false }));
    dependencies.watchMongo(mongo);
  }
  // One client per role whose URL is its own; a role without one shares the state's client.
  const connect = (url: string) => {
    const client = dependencies.guardRedis(connectRedis(url, { commandTimeoutMs: config.DEPENDENCY_TIMEOUT_MS }));
    client.on('error', (error) => logger.warn({ err: error }, 'redis connection error'));
    // Publishes nobody waits for (the emitter's, the pokes') must not turn a refused publish into a crash.
    keepPublishesHandled(client, logger);
    return client;
  };
  const redis = connect(config.REDIS_URL);
  const pubsub = config.REDIS_PUBSUB_URL && config.REDIS_PUBSUB_URL !== config.REDIS_URL ? connect(config.REDIS_PUBSUB_URL) : redis;
  const queuesRedis = config.REDIS_QUEUES_URL && config.REDIS_QUEUES_URL !== config.REDIS_URL ? connect(config.REDIS_QUEUES_URL) : redis;
  const clients = [...new Set([redis, pubsub, queuesRedis])];
  dependencies.watchRedis(redis);
  const keys = keyspace(config.REDIS_PREFIX);
  // Hot-path reads (the device check of every request, the room of every post) are cached for a
  // few seconds; writes clear them in every process through Redis.
  const cache = new CacheBus(pubsub, keys.cacheInvalidation);
  await cache.start();
  // Clearings published while Redis was away were lost: start the caches afresh when it is back.
  dependencies.onRecovered((name) => name === 'redis' && cache.clearAll());
  const queues = new Queues(queuesRedis, keys.queuePrefix, (connection) => dependencies.guardRedis(connection));
  const storage = once(() => blobStorage(config));
  const clock = options.clock ?? systemClock;
  const ephemeral = new EphemeralStore(redis);
  const smsGuard = new SmsGuard(smsPolicy(config), ephemeral, keys.smsBudget, clock);
  const sms = once(() => smsProvider(config, smsGuard));
  const email = once(() => emailProvider(config));
  const geo = once(() => new GeoipLiteLocator());

  return {
    config,
    logger,
    clock,
    keys,
    redis,
    pubsub,
    dependencies,
    ephemeral,
    smsGuard,
    codes: new CodeHasher({ memoryKiB: config.CODE_HASH_MEMORY_KIB, passes: config.CODE_HASH_PASSES }, { concurrency: config.CODE_HASH_CONCURRENCY, waitMs: config.CODE_HASH_WAIT_MS }),
    cache,
    domainEvents: new DomainEvents(logger),
    queues,
    crashAt: crashAt(config.CRASH_AT),
    get db() {
      if (!db) throw new Error('this process was started without a database');
      return db;
    },
    get storage() {
      return storage();
    },
    get sms() {
      return sms();
    },
    get email() {
      return email();
    },
    get geo() {
      return geo();
    },
    async health(timeoutMs) {
      const [mongodb, ping] = await Promise.allSettled([
        db ? withTimeout(db.command({ ping: 1 }), timeoutMs) : Promise.resolve(),
        withTimeout(Promise.all(clients.map((client) => client.ping())), timeoutMs),
      ]);
      return { mongodb: mongodb.status === 'fulfilled' ? 'ok' : 'down', redis: ping.status === 'fulfilled' ? 'ok' : 'down' };
    },
    async close() {
      dependencies.close();
      await queues.close();
      await Promise.allSettled([mongo?.close(), ...clients.map(closeRedis), cache.close()]);
    },
  };
}
