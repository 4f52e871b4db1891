import { Cluster, Command, Redis } from 'ioredis';
import { Gauge, type Registry } from 'prom-client';
import type { RedisClient } from './redis.js';
import { MongoNetworkError, MongoServerSelectionError, MongoTopologyClosedError, type MongoClient } from 'mongodb';
import { CommonErrors } from './common.errors.js';
import type { AppError } from './errors.js';
import type { Logger } from './logger.js';
import { errorMessage } from './errors.js';

/** A probe still unanswered after this long is dropped and the next one sent. */
const PROBE_GIVE_UP_MS = 60_000;

export type DependencyName = 'mongodb' | 'redis';

/** `dependency_up{dependency}`: 1 while this process finds the dependency answering (every role exports it for what it uses). */
export function dependencyGauge(registry: Registry, dependencies: Pick<DependencyHealth, 'isUp'>, names: readonly DependencyName[]): void {
  new Gauge({
    name: 'dependency_up',
    help: 'Whether this process finds MongoDB and Redis answering (0 while it answers requests with 503)',
    labelNames: ['dependency'],
    registers: [registry],
    collect() {
      for (const dependency of names) this.set({ dependency }, dependencies.isUp(dependency) ? 1 : 0);
    },
  });
}

/** A command refused without being sent, because Redis is known to be away. */
export class RedisUnavailableError extends Error {
  constructor() {
    super('Redis does not answer; the command was not sent');
    this.name = 'RedisUnavailableError';
  }
}

/** The messages ioredis rejects commands with when its server is away or does not answer. */
const REDIS_AWAY = [/^Command timed out$/, /^Connection is closed\.?$/, /enableOfflineQueue options is false/, /^Reached the max retries per request limit/];

/** Which dependency an error says is away (null when it is not such an error). */
export function dependencyOf(error: unknown): DependencyName | null {
  if (error instanceof MongoNetworkError || error instanceof MongoServerSelectionError || error instanceof MongoTopologyClosedError) return 'mongodb';
  if (error instanceof RedisUnavailableError) return 'redis';
  if (error instanceof Error && (error.name === 'MaxRetriesPerRequestError' || REDIS_AWAY.some((pattern) => pattern.test(error.message)))) return 'redis';
  return null;
}

/**
 * Whether MongoDB and Redis answer, kept by watching them rather than by waiting on requests: the
 * driver's own monitor tells of MongoDB (its heartbeat, every `probeMs`); a PING every `probeMs`,
 * bounded by `timeoutMs`, tells of Redis (a paused server keeps its connection open, so only an
 * unanswered command shows it). While one is away every request is refused at once (503 with its
 * code and Retry-After) and no command is sent to Redis but the probe, so nothing queues up; when it
 * answers again the service goes on by itself.
 */
export class DependencyHealth {
  private readonly up: Record<DependencyName, boolean> = { mongodb: true, redis: true };
  private readonly recovered: Array<(name: DependencyName) => void> = [];
  private probing = false;
  private closed = false;
  private redisClient: RedisClient | null = null;
  private timer: NodeJS.Timeout | null = null;
  /** Commands the probe sends: they pass the guard while Redis is away. */
  private readonly probes = new WeakSet<object>();

  constructor(
    private readonly logger: Logger,
    readonly timeoutMs: number,
    readonly probeMs: number,
  ) {}

  isUp(name: DependencyName): boolean {
    return this.up[name];
  }

  /** Seconds a client should wait before trying again. */
  get retryAfterSeconds(): number {
    return Math.max(1, Math.ceil(this.probeMs / 1000));
  }

  /** The 503 while either is away, or null when both answer. */
  refusal(): AppError | null {
    const away = (['mongodb', 'redis'] as const).find((name) => !this.up[name]);
    return away ? this.unavailable(away) : null;
  }

  unavailable(name: DependencyName, cause?: unknown): AppError {
    const options = { retryAfter: this.retryAfterSeconds, cause };
    return name === 'mongodb' ? CommonErrors.DATABASE_UNAVAILABLE(options) : CommonErrors.REDIS_UNAVAILABLE(options);
  }

  /** Runs `fn` each time a dependency answers again after being away (caches that missed news are dropped). */
  onRecovered(fn: (name: DependencyName) => void): void {
    this.recovered.push(fn);
  }

  set(name: DependencyName, up: boolean, reason?: string): void {
    if (this.closed || this.up[name] === up) return;
    this.up[name] = up;
    if (up) {
      this.logger.warn({ dependency: name }, `${name} answers again`);
      for (const fn of this.recovered) fn(name);
    } else {
      this.logger.error({ dependency: name, reason }, `${name} does not answer: requests get 503 until it does`);
    }
  }

  /** An error met on the way: if it says a dependency is away, mark it (Redis is then probed at once). */
  noteError(error: unknown): DependencyName | null {
    const name = dependencyOf(error);
    if (name === 'redis') {
      this.set('redis', false, errorMessage(error));
      this.probeRedisSoon();
    }
    return name;
  }

  /** Follows the driver's view of the deployment: away while no server that holds data answers. */
  watchMongo(client: MongoClient): void {
    client.on('topologyDescriptionChanged', (event) => {
      const up = event.newDescription.hasDataBearingServers;
      // The first descriptions, while connecting, know no server yet: not an outage.
      if (up || event.previousDescription.hasDataBearingServers) this.set('mongodb', up, 'no server that holds data answers the driver');
    });
  }

  /**
   * Guards `redis`: while Redis is away its commands fail at once instead of waiting in ioredis's
   * queues. Connected to a server that stopped answering, the guard refuses them (RedisUnavailableError)
   * and only the probe is sent; disconnected (after the first connection), ioredis refuses them itself
   * (no offline queue) while its own handshake goes through. Call for every client of request paths.
   */
  guardRedis<C extends RedisClient>(redis: C): C {
    // ioredis's own sendCommand, looked up at each call (a test's round-trip counter wraps it).
    const own = redis instanceof Cluster ? Cluster.prototype : Redis.prototype;
    // Every argument passed on: a cluster's pipelines name the node as a third.
    const send = (command: Command, ...rest: unknown[]) => (own.sendCommand as (this: unknown, command: Command, ...rest: unknown[]) => unknown).call(redis, command, ...rest);
    // Cast: the wrapper takes and returns what ioredis's sendCommand does.
    redis.sendCommand = ((command: Command, ...rest: unknown[]) => {
      if (!this.up.redis && redis.status === 'ready' && !this.probes.has(command)) {
        command.reject(new RedisUnavailableError());
        return command.promise;
      }
      return send(command, ...rest);
    }) as typeof redis.sendCommand;
    // Queued while connecting at start-up (the process waits for Redis); never again after. Not on a
    // cluster: there a command for a master that just died must wait for its replica to take over (the
    // cluster client refreshes its map of slots only for commands it keeps).
    if (!(redis instanceof Cluster)) redis.once('ready', () => (redis.options.enableOfflineQueue = false));
    // A connection lost (not closed on purpose, which does not reconnect) says Redis is away.
    redis.on('reconnecting', () => this.set('redis', false, 'connection lost'));
    redis.on('ready', () => this.probeRedisSoon());
    return redis;
  }

  /** Probes `redis` every `probeMs` from now on. */
  watchRedis(redis: RedisClient): void {
    this.redisClient = redis;
    this.timer = setInterval(() => this.probeRedis(), this.probeMs);
    this.timer.unref();
  }

  private probeRedisSoon(): void {
    setImmediate(() => this.probeRedis());
  }

  /**
   * One PING at a time: while Redis is paused the one sent waits for it (not for the client's
   * command timeout), so no more pile up; Redis counts as away once it has waited `timeoutMs`.
   */
  private probeRedis(): void {
    const redis = this.redisClient;
    if (!redis || this.probing || redis.status === 'end') return;
    this.probing = true;
    const ping = new Command('ping', [], { replyEncoding: 'utf8' });
    ping.setTimeout(PROBE_GIVE_UP_MS);
    this.probes.add(ping);
    const late = setTimeout(() => this.set('redis', false, `no answer to PING within ${this.timeoutMs} ms`), this.timeoutMs);
    late.unref();
    void redis.sendCommand(ping);
    ping.promise.then(
      () => this.set('redis', true),
      (error: unknown) => this.set('redis', false, errorMessage(error)),
    ).finally(() => {
      clearTimeout(late);
      this.probing = false;
    });
  }

  close(): void {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
  }
}
