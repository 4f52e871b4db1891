import type { RedisClient } from '../platform/redis.js';
import type { DeviceEventMap, DeviceEventName } from '../platform/device-events.js';
import type { Keyspace } from '../platform/keyspace.js';
import '../platform/redis-commands.js';

/** One stored device event, as delivered: `{seq, at, data}` under its event name (the shared device-event map). */
export type InboxEntry = StoredEvent & { seq: number; at: string };

/** What the inbox keeps of an event besides its place: its name and its payload, as the map pairs them. */
type StoredEvent = { [K in DeviceEventName]: { event: K; data: DeviceEventMap[K] } }[DeviceEventName];

export interface InboxState {
  /** Highest sequence number given out so far (0 when none). */
  seq: number;
  /** Highest sequence number dropped by the count or age bound before it was acknowledged. */
  lost: number;
}

// Appends one event: next seq, store, then trim by count and age, remembering what the bound dropped.
// Members are "<atMs>|<seq>|<json>" scored by seq, so age trimming reads the time from the oldest member.
const APPEND = `
local seq = redis.call('HINCRBY', KEYS[1], 'seq', 1)
local now = tonumber(ARGV[1])
redis.call('ZADD', KEYS[2], seq, ARGV[1] .. '|' .. seq .. '|' .. ARGV[2])
local max = tonumber(ARGV[3])
local cutoff = now - tonumber(ARGV[4])
local lost = 0
local n = redis.call('ZCARD', KEYS[2])
if n > max then
  local dropped = redis.call('ZRANGE', KEYS[2], n - max - 1, n - max - 1, 'WITHSCORES')
  lost = tonumber(dropped[2])
  redis.call('ZREMRANGEBYRANK', KEYS[2], 0, n - max - 1)
end
while true do
  local oldest = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
  if #oldest == 0 then break end
  local at = tonumber(string.match(oldest[1], '^(%d+)|'))
  if at >= cutoff then break end
  lost = math.max(lost, tonumber(oldest[2]))
  redis.call('ZREMRANGEBYRANK', KEYS[2], 0, 0)
end
if lost > 0 then
  local before = tonumber(redis.call('HGET', KEYS[1], 'lost') or '0')
  if lost > before then redis.call('HSET', KEYS[1], 'lost', lost) end
end
return seq
`;

// Replaces the stored event at one sequence number (kept with its time and place), if it is still there.
const REPLACE = `
local found = redis.call('ZRANGEBYSCORE', KEYS[1], ARGV[1], ARGV[1])
if #found == 0 then return 0 end
local at = string.match(found[1], '^(%d+)|')
redis.call('ZREM', KEYS[1], found[1])
redis.call('ZADD', KEYS[1], ARGV[1], at .. '|' .. ARGV[1] .. '|' .. ARGV[2])
return 1
`;

/** How many events one read of an inbox takes at most. */
export const READ_BATCH = 500;

/**
 * Per-device event inbox in Redis (docs/clients/socket-protocol.md): every device event is
 * written here with an increasing sequence number before anyone is told, so a device that was
 * offline, or whose hub node died, gets every later event in order on reconnect.
 */
export class DeviceInbox {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keyspace,
    private readonly bounds: { maxEvents: number; maxAgeSeconds: number },
  ) {
    this.redis.defineCommand('inboxAppend', { numberOfKeys: 2, lua: APPEND });
    this.redis.defineCommand('inboxReplace', { numberOfKeys: 1, lua: REPLACE });
  }

  private metaKey(deviceId: string) {
    return this.keys.inboxMeta(deviceId);
  }

  private eventsKey(deviceId: string) {
    return this.keys.inboxEvents(deviceId);
  }

  /** Stores one event for the device; returns its sequence number. */
  async append<K extends DeviceEventName>(deviceId: string, event: K, data: DeviceEventMap[K], now = Date.now()): Promise<number> {
    const json = JSON.stringify({ event, data });
    return Number(await this.redis.inboxAppend(this.metaKey(deviceId), this.eventsKey(deviceId), now, json, this.bounds.maxEvents, this.bounds.maxAgeSeconds * 1000));
  }

  /**
   * Puts another event in the place of the one stored at `seq` (an event that no longer holds, such
   * as a key request already answered), so a device that reads it later gets the replacement, with
   * no gap in the sequence. False when the device already acknowledged it, or it was trimmed.
   */
  async replace<K extends DeviceEventName>(deviceId: string, seq: number, event: K, data: DeviceEventMap[K]): Promise<boolean> {
    return (await this.redis.inboxReplace(this.eventsKey(deviceId), String(seq), JSON.stringify({ event, data }))) === 1;
  }

  /** The sequence number of the newest event the inbox still holds (0 when it holds none: all acknowledged or trimmed). */
  async newest(deviceId: string): Promise<number> {
    const [, score] = await this.redis.zrevrange(this.eventsKey(deviceId), 0, 0, 'WITHSCORES');
    return Number(score ?? 0);
  }

  async state(deviceId: string): Promise<InboxState> {
    const [seq, lost] = await this.redis.hmget(this.metaKey(deviceId), 'seq', 'lost');
    return { seq: Number(seq ?? 0), lost: Number(lost ?? 0) };
  }

  /** Events with a sequence number above `afterSeq`, oldest first, at most one batch. */
  async readAfter(deviceId: string, afterSeq: number, limit = READ_BATCH): Promise<InboxEntry[]> {
    const members = await this.redis.zrangebyscore(this.eventsKey(deviceId), `(${afterSeq}`, '+inf', 'LIMIT', 0, limit);
    return members.map((member) => {
      const first = member.indexOf('|');
      const second = member.indexOf('|', first + 1);
      // Written by append() above, so of the shape the device-event map gives its name.
      // Cast: written by append() above, as this same shape.
      const stored = JSON.parse(member.slice(second + 1)) as StoredEvent;
      return Object.assign({ seq: Number(member.slice(first + 1, second)), at: new Date(Number(member.slice(0, first))).toISOString() }, stored);
    });
  }

  /** Trims every event up to and including `seq`: the device has processed them. */
  async ack(deviceId: string, seq: number): Promise<void> {
    await this.redis.zremrangebyscore(this.eventsKey(deviceId), '-inf', seq);
  }

  /** Forgets a device's inbox (after revocation). */
  async drop(deviceId: string): Promise<void> {
    await this.redis.del(this.metaKey(deviceId), this.eventsKey(deviceId));
  }
}
