import { sharedCache, type CacheBus, type SharedCache } from '../platform/cache/invalidation.js';
import type { Keyspace } from '../platform/keyspace.js';
import type { RedisClient } from '../platform/redis.js';

/**
 * Who a room's new message could be pushed to, known without the worker: the devices with a push
 * token of the members a post is pushed to (active, enabled, unmuted), as the last push job of the
 * room found them. A post whose every such device (the author's aside) has a live socket, or whose
 * room has none at all, starts no job: the broadcast reached everyone a push would (issue 53).
 *
 * Kept in Redis beside a version (one hash tag, so one slot on a cluster). The worker reads the
 * version before it reads the database and writes the reach only if no change came meanwhile; a
 * change that could add a device (a member joined, was enabled or unmuted, a member set a push
 * token) bumps the version and drops the reach, so the next post starts a job, which learns it
 * again. Changes that only take devices away (a member left, muted the room, a token was refused)
 * need nothing: the job finds fewer. The reach also expires, so a change made behind the service's
 * back (a database edited by hand) heals within REACH_TTL_MS.
 */
export interface RoomReach {
  /** [deviceId, userId] of each device with a push token; null when there are more than REACH_MAX_DEVICES (every post starts a job). */
  devices: [string, string][] | null;
}

/** Devices a post checks the presence of on the request path; a room with more always gets a job. */
export const REACH_MAX_DEVICES = 64;
const REACH_TTL_MS = 5 * 60_000;
/** How long a process keeps a reach it read (clearings reach it sooner). */
const REACH_CACHE_MS = 5_000;

// Writes the reach only while the version is the one read before the database was (none: ''):
// 1 when that changed what was kept, 2 when it was kept already (its life renewed), 0 when refused.
const STORE = `local v = redis.call('GET', KEYS[2]) or ''
if v ~= ARGV[1] then return 0 end
local before = redis.call('GET', KEYS[1])
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
if before == ARGV[2] then return 2 end
return 1`;

export class PushReachStore {
  private readonly cached: SharedCache<RoomReach | null>;

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keyspace['push'],
    /** Every process's cache bus: a post reads the reach from memory; a change clears it everywhere. */
    bus?: CacheBus,
  ) {
    this.cached = sharedCache<RoomReach | null>(bus, 'push-reach', REACH_CACHE_MS);
  }

  /**
   * The room's reach as the last job learned it, or null when unknown (changed since, expired, never
   * learned). Kept in this process for REACH_CACHE_MS; a change (`forget`) and a job's new reach
   * (`store`) clear it in every process within milliseconds; a clearing lost on the way leaves a
   * stale entry for at most REACH_CACHE_MS.
   */
  async of(roomId: string): Promise<RoomReach | null> {
    return this.cached.get(roomId, async () => {
      const stored = await this.redis.get(this.keys.reach(roomId));
      return stored === null ? null : (JSON.parse(stored) as RoomReach);
    });
  }

  /** The version to hand `store` back: read before the database is. */
  async version(roomId: string): Promise<string> {
    return (await this.redis.get(this.keys.reachVersion(roomId))) ?? '';
  }

  /** Keeps what the job learned (null: more members than the request path checks), unless the room changed since `version` was read. */
  async store(roomId: string, version: string, devices: [string, string][] | null): Promise<void> {
    const reach: RoomReach = { devices: devices === null || devices.length > REACH_MAX_DEVICES ? null : devices };
    const stored = await this.redis.eval(STORE, 2, this.keys.reach(roomId), this.keys.reachVersion(roomId), version, JSON.stringify(reach), REACH_TTL_MS);
    // A new reach: processes that cached "unknown" (every post a job) or an older one read it again.
    if (stored === 1) await this.cached.clear(roomId);
  }

  /** Something that could add a device changed in these rooms: their reach dropped, a job in progress kept from writing it. */
  async forget(roomIds: string[]): Promise<void> {
    await Promise.all(
      roomIds.map((roomId) =>
        this.redis
          .multi()
          .incr(this.keys.reachVersion(roomId))
          // Outlives any job that read the version before (a job takes seconds, not a day).
          .pexpire(this.keys.reachVersion(roomId), 24 * 3600_000)
          .del(this.keys.reach(roomId))
          .exec()
          .then(() => this.cached.clear(roomId)),
      ),
    );
  }
}

/**
 * Whether a new message of `roomId` by `authorId` may have someone to push to: unknown reach (the job
 * finds out), more devices than the request path checks, or a device of another member without a
 * live socket. `onlineAmong` answers which of the devices have one.
 */
export async function mayNeedPush(reach: PushReachStore, onlineAmong: (deviceIds: string[]) => Promise<Set<string>>, roomId: string, authorId: string): Promise<boolean> {
  const known = await reach.of(roomId);
  if (known === null || known.devices === null) return true;
  const others = known.devices.filter(([, userId]) => userId !== authorId).map(([deviceId]) => deviceId);
  if (others.length === 0) return false;
  const online = await onlineAmong(others);
  return others.some((deviceId) => !online.has(deviceId));
}
