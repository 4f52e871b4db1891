import type { RedisClient } from '../platform/redis.js';
import type { Keyspace } from '../platform/keyspace.js';

export interface DevicePresence {
  deviceId: string;
  online: boolean;
  /** Last time the device was seen connected (now-ish while online); null when never. */
  lastSeenAt: string | null;
}

/** How long `onlineAmong` trusts a node's heartbeat it read (at most a quarter of the heartbeat's life). */
const NODE_CHECK_MS = 1_000;

/** How long a device's set of nodes outlives its last connection (dead nodes' entries go with it). */
const DEVICE_NODES_TTL_MS = 7 * 24 * 3600 * 1000;

/**
 * Device presence in Redis, right across hub nodes. Each node refreshes one expiring heartbeat key
 * of its own, and each device has the set of nodes holding a socket of it: the device is online
 * while any of those nodes' heartbeats lives. A node that dies without a word takes all its devices
 * offline within the heartbeat's life, and a heartbeat costs one command however many sockets the
 * node holds. Last-seen times are kept apart and never expire.
 */
export class PresenceStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keyspace['presence'],
    readonly ttlMs: number,
  ) {
  }

  /** The node's heartbeat: its last beat time, expiring after one heartbeat life. */
  private nodeKey(nodeId: string) {
    return this.keys.node(nodeId);
  }

  /** The node's last beat time, kept after it dies: when its devices were last seen. */
  private nodeLastKey(nodeId: string) {
    return this.keys.nodeLast(nodeId);
  }

  private deviceNodesKey(deviceId: string) {
    return this.keys.deviceNodes(deviceId);
  }

  private seenKey(deviceId: string) {
    return this.keys.seen(deviceId);
  }

  /** The node is alive: every device it holds stays online for one more heartbeat life. */
  async beat(nodeId: string, now = Date.now()): Promise<void> {
    await this.redis
      .multi()
      .set(this.nodeKey(nodeId), String(now), 'PX', this.ttlMs)
      .set(this.nodeLastKey(nodeId), String(now), 'PX', DEVICE_NODES_TTL_MS)
      .exec();
  }

  /**
   * A socket of the device arrived on this node: online at once (the node beats from its start). The
   * device's keys only, in its slot: the node's own are refreshed by its beat.
   */
  async connect(nodeId: string, deviceId: string, now = Date.now()): Promise<void> {
    await this.redis
      .multi()
      .sadd(this.deviceNodesKey(deviceId), nodeId)
      .pexpire(this.deviceNodesKey(deviceId), DEVICE_NODES_TTL_MS)
      .set(this.seenKey(deviceId), String(now))
      .exec();
  }

  /** The device's last socket left this node: offline at once unless another node holds it. */
  async release(nodeId: string, deviceId: string, now = Date.now()): Promise<void> {
    await this.redis.multi().srem(this.deviceNodesKey(deviceId), nodeId).set(this.seenKey(deviceId), String(now)).exec();
  }

  /** The node stops (a clean shutdown): its devices go offline at once. */
  async nodeGone(nodeId: string): Promise<void> {
    await this.redis.del(this.nodeKey(nodeId));
  }

  /** The hub nodes that hold (or held, if they died without a word) a socket of the device. */
  nodesOf(deviceId: string): Promise<string[]> {
    return this.redis.smembers(this.deviceNodesKey(deviceId));
  }

  /**
   * Online when any node holding the device still has its heartbeat. Two round trips (the device's
   * nodes, then their heartbeats, which live in the nodes' own slots on a cluster).
   */
  async isOnline(deviceId: string): Promise<boolean> {
    const nodes = await this.nodesOf(deviceId);
    const beats = await Promise.all(nodes.map((node) => this.redis.exists(this.nodeKey(node))));
    return beats.some((beat) => beat === 1);
  }

  /**
   * Which of `deviceIds` are online, as `ofDevices` tells it without the last-seen times: one round
   * trip for their nodes (one write per server), and the heartbeats of nodes this process has not
   * checked in the last second (a handful of hubs: about once a second each). A node that died is
   * seen dead at most that second after its heartbeat expired (`ttlMs`, 30 s by default).
   */
  async onlineAmong(deviceIds: string[]): Promise<Set<string>> {
    // A device with a socket on a hub of this very process is online: no need to ask Redis (every role
    // in one process, as `npm start` runs them).
    const local: string[] = [];
    const others: string[] = [];
    for (const id of deviceIds) (this.heldHere(id) ? local : others).push(id);
    if (others.length === 0) return new Set(local);
    const nodesOf = await Promise.all(others.map((id) => this.nodesOf(id)));
    const alive = await this.aliveAmong([...new Set(nodesOf.flat())]);
    // `!`: nodesOf has one entry per device id.
    return new Set([...local, ...others.filter((_, i) => nodesOf[i]!.some((n) => alive.has(n)))]);
  }

  /** Hubs of this process, each answering whether it holds a socket of a device (registered by the hub, dropped at its close). */
  private readonly localHubs = new Set<(deviceId: string) => boolean>();

  /** A hub of this process tells which devices it holds; the returned function unregisters it. */
  holdsLocally(holds: (deviceId: string) => boolean): () => void {
    this.localHubs.add(holds);
    return () => void this.localHubs.delete(holds);
  }

  private heldHere(deviceId: string): boolean {
    for (const holds of this.localHubs) if (holds(deviceId)) return true;
    return false;
  }

  /** Nodes' heartbeats as this process last read them, each kept NODE_CHECK_MS. */
  private readonly nodeChecks = new Map<string, { alive: boolean; until: number }>();

  private async aliveAmong(nodes: string[]): Promise<Set<string>> {
    const now = Date.now();
    const stale = nodes.filter((node) => (this.nodeChecks.get(node)?.until ?? 0) <= now);
    if (stale.length > 0) {
      const beats = await Promise.all(stale.map((node) => this.redis.exists(this.nodeKey(node))));
      // Nodes come and go with deployments: the checks of those gone are dropped past a bound.
      if (this.nodeChecks.size > 10_000) this.nodeChecks.clear();
      const until = now + Math.min(NODE_CHECK_MS, this.ttlMs / 4);
      stale.forEach((node, i) => this.nodeChecks.set(node, { alive: beats[i] === 1, until }));
    }
    return new Set(nodes.filter((node) => this.nodeChecks.get(node)?.alive));
  }

  async ofDevices(deviceIds: string[]): Promise<DevicePresence[]> {
    if (deviceIds.length === 0) return [];
    // One command per key, sent together: auto-pipelining makes them one write per server (keys of
    // many slots cannot share a MULTI or an MGET on a cluster).
    const [nodesOf, seenOf] = await Promise.all([Promise.all(deviceIds.map((id) => this.nodesOf(id))), Promise.all(deviceIds.map((id) => this.redis.get(this.seenKey(id))))]);
    const nodes = [...new Set(nodesOf.flat())];
    const [beats, lasts] = await Promise.all([Promise.all(nodes.map((n) => this.redis.get(this.nodeKey(n)))), Promise.all(nodes.map((n) => this.redis.get(this.nodeLastKey(n))))]);
    const beatOf = new Map(nodes.map((n, i) => [n, beats[i] ?? null]));
    const lastOf = new Map(nodes.map((n, i) => [n, lasts[i] ?? null]));
    // `!`: nodesOf has one entry per device id.
    return deviceIds.map((deviceId, i) => {
      const alive = nodesOf[i]!.filter((n) => beatOf.get(n));
      // Online: seen at the latest heartbeat of a node holding it. Offline: the later of its last
      // disconnect and the last heartbeat of a node that held it when that node died.
      const times = alive.length > 0 ? alive.map((n) => Number(beatOf.get(n))) : [Number(seenOf[i] ?? 0), ...nodesOf[i]!.map((n) => Number(lastOf.get(n) ?? 0))];
      const seen = Math.max(0, ...times);
      return { deviceId, online: alive.length > 0, lastSeenAt: seen > 0 ? new Date(seen).toISOString() : null };
    });
  }
}
