import { isDeepStrictEqual } from 'node:util';
import { io as connect, type Socket } from 'socket.io-client';
import { DEVICE_EVENTS } from '../../src/platform/device-events.schemas.js';
import type { Config } from '../../src/platform/config.js';
import { Cluster } from 'ioredis';
import type { RedisClient } from '../../src/platform/redis.js';
import { loggedPort, opsReady, spawnRole, type RoleProcess } from './processes.js';

export interface HubProcess extends RoleProcess {
  port: number;
  /** Its operations port (/healthz, /readyz, /metrics). */
  opsPort: number;
}

/** A hub node as its own process (`--role=realtime`), sharing the test's database and Redis prefix. */
export async function spawnHub(config: Config, env: Record<string, string> = {}): Promise<HubProcess> {
  // Port 0 for both: the hub takes free ports itself and logs them.
  const hubEnv = { PRESENCE_TTL: String(config.PRESENCE_TTL), INBOX_MAX_EVENTS: String(config.INBOX_MAX_EVENTS), SOCKET_PORT: '0', OPS_PORT: '0', ...env };
  // Ready when its operations port says so, as an orchestrator's probe would see it (it comes up after the socket port).
  const role = await spawnRole('realtime', config, hubEnv, opsReady);
  const port = loggedPort(role.output(), 'socket hub listening');
  const opsPort = loggedPort(role.output(), 'operations port listening');
  if (port === undefined || opsPort === undefined) throw new Error(`the hub logged no ports: ${role.output()}`);
  return { port, opsPort, ...role };
}

/** Whether the hub holds any socket now (its `hub_sockets` gauge): which of several hubs a client landed on. */
export async function holdsSockets(hub: { opsPort: number }): Promise<boolean> {
  const metrics = await (await fetch(`http://127.0.0.1:${hub.opsPort}/metrics`)).text();
  return /^hub_sockets (\d+)/m.exec(metrics)?.[1] !== '0';
}

export interface Received {
  event: string;
  seq: number;
  at: string;
  data: Record<string, unknown>;
}

/**
 * A phone's socket as a client app codes it: connects with its token and the last sequence it
 * processed, records every device event, and can move to another node keeping its `lastSeq`.
 */
export class DeviceClient {
  socket: Socket | null = null;
  readonly received: Received[] = [];
  /**
   * Device events that do not match the protocol document (an unknown name, a missing or mistyped
   * field, or a field the document does not list): `until` fails on the first.
   */
  readonly violations: string[] = [];
  /** Each `rooms.resync-required` the hub sent (its room broadcasts lapsed: catch up over REST), over every connection. */
  readonly resyncs: { reason: string; since: string }[] = [];
  lastSeq = 0;
  /** Why each connection ended, as socket.io-client said (`transport close`, `io server disconnect`, …). */
  readonly disconnections: string[] = [];
  /** How many `hub.draining` notices arrived. */
  drainings = 0;
  private waiters: (() => void)[] = [];

  constructor(private readonly token: string) {}

  /** `lastSeqAsString`: send it as Android's socket.io-client-java does (every `auth` value a string). */
  /**
   * `reconnect`: as an app sets socket.io-client up, reconnecting by itself (quickly here) with the
   * newest lastSeq each time; the reasons of its disconnections and the hub.draining notices it got
   * are kept.
   */
  connect(port: number, options: { lastSeqAsString?: boolean; reconnect?: boolean } = {}): Promise<void> {
    const socket = connect(`http://127.0.0.1:${port}`, {
      path: '/socket.io/',
      transports: ['websocket'],
      auth: options.reconnect ? (send) => send({ token: this.token, lastSeq: this.lastSeq }) : { token: this.token, lastSeq: options.lastSeqAsString ? String(this.lastSeq) : this.lastSeq },
      reconnection: options.reconnect === true,
      reconnectionDelay: 100,
      reconnectionDelayMax: 1_000,
      forceNew: true,
    });
    this.socket = socket;
    socket.on('disconnect', (reason) => this.disconnections.push(reason));
    socket.on('hub.draining', () => this.drainings++);
    socket.on('rooms.resync-required', (payload: { reason: string; since: string }) => this.resyncs.push(payload));
    socket.onAny((event: string, envelope: { seq: number; at: string; data: Record<string, unknown> }) => {
      if (typeof envelope?.seq !== 'number') return;
      this.received.push({ event, ...envelope });
      const schema = (DEVICE_EVENTS as Record<string, import('zod').ZodType>)[event];
      const checked = schema?.safeParse(envelope.data);
      if (!checked?.success || !isDeepStrictEqual(checked.data, envelope.data)) this.violations.push(`${event}: ${JSON.stringify(envelope.data)} is not as the protocol document says`);
      this.lastSeq = envelope.seq;
      for (const wake of this.waiters.splice(0)) wake();
    });
    return new Promise((resolve, reject) => {
      socket.once('connect', () => resolve());
      socket.once('connect_error', reject);
    });
  }

  disconnected(): Promise<string> {
    return new Promise((resolve) => this.socket!.once('disconnect', (reason) => resolve(reason)));
  }

  /** Resolves once `predicate` holds over what was received; rejects after `ms`. */
  async until(predicate: (received: Received[]) => boolean, ms = 5_000): Promise<void> {
    const deadline = Date.now() + ms;
    while (!predicate(this.received)) {
      if (this.violations.length > 0) throw new Error(this.violations[0]);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out; received ${JSON.stringify(this.received.map((r) => [r.event, r.seq]))}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(left, 100));
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    if (this.violations.length > 0) throw new Error(this.violations[0]);
  }

  /** Stops taking bytes from the connection (a phone in a tunnel): what the hub writes piles up on its side. */
  pauseReading(): void {
    this.rawConnection().pause();
  }

  resumeReading(): void {
    this.rawConnection().resume();
  }

  /** The TCP connection under socket.io-client's WebSocket (the `ws` package in Node). */
  private rawConnection(): { pause(): void; resume(): void } {
    const engine = (this.socket as unknown as { io: { engine: { transport: { ws: { _socket: { pause(): void; resume(): void } } } } } }).io.engine;
    return engine.transport.ws._socket;
  }

  ack(seq = this.lastSeq): void {
    this.socket?.emit('inbox.ack', { seq });
  }

  close(): void {
    this.socket?.disconnect();
  }
}

/** How many connections subscribe to a sharded channel (on a cluster, summed over the masters: each answers for its own shards). */
export async function shardSubscribers(redis: RedisClient, channel: string): Promise<number> {
  const nodes = redis instanceof Cluster ? redis.nodes('master') : [redis];
  // Cast: PUBSUB SHARDNUMSUB answers [channel, count].
  const counts = await Promise.all(nodes.map(async (node) => Number(((await node.call('PUBSUB', 'SHARDNUMSUB', channel)) as [string, number])[1])));
  return counts.reduce((sum, count) => sum + count, 0);
}

/** A call.signal device event's payload, told apart by `i` (tests that count or order device events send these). */
export function callSignal(i: number) {
  return { callId: 'call-1', fromDeviceId: 'peer', kind: 'candidate' as const, payload: { i } };
}

/**
 * Drops every connection whose name ends with `name` (on a cluster, on every node: ioredis names a
 * cluster's subscriber connections `ioredis-cluster(ssubscriber):NAME`), as a Redis restart drops them.
 * Answers how many it dropped.
 */
export async function dropConnections(redis: RedisClient, name: string): Promise<number> {
  const nodes = redis instanceof Cluster ? redis.nodes('all') : [redis];
  const dropped = await Promise.all(
    nodes.map(async (node) => {
      const lines = String(await node.call('CLIENT', 'LIST', 'TYPE', 'pubsub')).split('\n');
      const ids = lines.filter((line) => new RegExp(`\\bname=(\\S*:)?${name} `).test(line)).map((line) => /\bid=(\d+)/.exec(line)![1]!);
      for (const id of ids) await node.call('CLIENT', 'KILL', 'ID', id);
      return ids.length;
    }),
  );
  return dropped.reduce((sum, count) => sum + count, 0);
}

/** The sharded channels matching `pattern` that have a subscriber (on a cluster, over every master). */
export async function shardChannels(redis: RedisClient, pattern: string): Promise<string[]> {
  const nodes = redis instanceof Cluster ? redis.nodes('master') : [redis];
  return (await Promise.all(nodes.map(async (node) => (await node.call('PUBSUB', 'SHARDCHANNELS', pattern)) as string[]))).flat();
}
