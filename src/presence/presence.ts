import type { Redis } from 'ioredis';

export interface DevicePresence {
  deviceId: string;
  online: boolean;
  /** Last time the device was seen connected (now-ish while online); null when never. */
  lastSeenAt: string | null;
}

// Removes a device's heartbeat only if this node wrote it, so a device that moved to another node stays online.
const RELEASE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
redis.call('SET', KEYS[2], ARGV[2])
return 1
`;

/**
 * Device presence in Redis, right across hub nodes: each node refreshes an expiring heartbeat key for
 * every device it holds, so a node that dies without a word lets its devices go offline within the
 * heartbeat's life. Last-seen times are kept apart and never expire.
 */
export class PresenceStore {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    readonly ttlMs: number,
  ) {
    this.redis.defineCommand('presenceRelease', { numberOfKeys: 2, lua: RELEASE });
  }

  private onlineKey(deviceId: string) {
    return `${this.prefix}presence:online:${deviceId}`;
  }

  private seenKey(deviceId: string) {
    return `${this.prefix}presence:seen:${deviceId}`;
  }

  /** Marks devices held by `nodeId` online for one heartbeat life. */
  async beat(nodeId: string, deviceIds: Iterable<string>, now = Date.now()): Promise<void> {
    const pipeline = this.redis.pipeline();
    let count = 0;
    for (const deviceId of deviceIds) {
      pipeline.set(this.onlineKey(deviceId), nodeId, 'PX', this.ttlMs);
      pipeline.set(this.seenKey(deviceId), String(now));
      count++;
    }
    if (count > 0) await pipeline.exec();
  }

  /** The device left this node: offline at once unless another node holds it now. */
  async release(nodeId: string, deviceId: string, now = Date.now()): Promise<void> {
    const release = (this.redis as unknown as { presenceRelease: (...args: string[]) => Promise<number> }).presenceRelease;
    await release.call(this.redis, this.onlineKey(deviceId), this.seenKey(deviceId), nodeId, String(now));
  }

  async isOnline(deviceId: string): Promise<boolean> {
    return (await this.redis.exists(this.onlineKey(deviceId))) === 1;
  }

  async ofDevices(deviceIds: string[]): Promise<DevicePresence[]> {
    if (deviceIds.length === 0) return [];
    const keys = deviceIds.flatMap((id) => [this.onlineKey(id), this.seenKey(id)]);
    const values = await this.redis.mget(...keys);
    return deviceIds.map((deviceId, i) => {
      const online = values[2 * i] !== null;
      const seen = values[2 * i + 1];
      return { deviceId, online, lastSeenAt: seen ? new Date(Number(seen)).toISOString() : null };
    });
  }
}
