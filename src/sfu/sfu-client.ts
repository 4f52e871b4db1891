import type { RedisClient } from '../platform/redis.js';
import { SFU_SECRET_HEADER, type SfuKeys, type SfuNodeAnnouncement, type SfuOp, type SfuOps } from './protocol.js';
import { SfuErrors } from './sfu.errors.js';
import { declaredError } from '../platform/errors.js';
import { z } from 'zod';

const SfuNodeAnnouncementSchema = z.object({ id: z.string(), url: z.string(), routers: z.number() });
/** A node's refusal: its declared code and message. */
const RefusalSchema = z.object({ code: z.string().optional(), message: z.string().optional() });

const unavailable = () => SfuErrors.SFU_UNAVAILABLE();

/**
 * The api's side of the SFU: picks the least busy live node for a new call, and sends each
 * operation to the node that holds the call.
 */
export class SfuClient {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: SfuKeys,
    private readonly secret: string,
    private readonly timeoutMs = 10_000,
  ) {}

  /** The live nodes, least busy first. */
  async liveNodes(): Promise<SfuNodeAnnouncement[]> {
    const ids = await this.redis.smembers(this.keys.nodes);
    if (ids.length === 0) return [];
    const values = await this.redis.mget(ids.map((id) => this.keys.node(id)));
    const gone = ids.filter((_, i) => !values[i]);
    if (gone.length > 0) await this.redis.srem(this.keys.nodes, ...gone);
    return values
      .filter((value): value is string => Boolean(value))
      .map((value) => SfuNodeAnnouncementSchema.parse(JSON.parse(value)))
      .sort((a, b) => a.routers - b.routers);
  }

  /** A node for a new call; 503 SFU_UNAVAILABLE when there is none. */
  async pickNode(): Promise<string> {
    const [best] = await this.liveNodes();
    if (!best) throw unavailable();
    return best.id;
  }

  async isAlive(nodeId: string): Promise<boolean> {
    return (await this.redis.exists(this.keys.node(nodeId))) === 1;
  }

  /** Notes a call under way on a node, so that the node's end is noticed without reading the database. */
  async track(callId: string, nodeId: string): Promise<void> {
    await this.redis.hset(this.keys.calls, callId, nodeId);
  }

  async untrack(callId: string): Promise<void> {
    await this.redis.hdel(this.keys.calls, callId);
  }

  /**
   * The calls whose media is gone: those a node reported lost (its worker died), and those on nodes
   * that stopped announcing themselves. Only the calls under way are read (one hash), not the database.
   */
  async lostCalls(): Promise<string[]> {
    const [reported, tracked] = await Promise.all([this.redis.spop(this.keys.failedCalls, 1000), this.redis.hgetall(this.keys.calls)]);
    const nodeIds = [...new Set(Object.values(tracked))];
    const alive = nodeIds.length === 0 ? [] : await this.redis.mget(nodeIds.map((id) => this.keys.node(id)));
    const dead = new Set(nodeIds.filter((_, i) => !alive[i]));
    const orphaned = Object.entries(tracked).filter(([, nodeId]) => dead.has(nodeId)).map(([callId]) => callId);
    return [...new Set([...reported, ...orphaned])];
  }

  /** Sends one operation to the node holding the call. Node refusals become 400s with the node's code. */
  async send<K extends SfuOp>(nodeId: string, op: K, request: SfuOps[K]['request']): Promise<SfuOps[K]['response']> {
    const raw = await this.redis.get(this.keys.node(nodeId));
    if (!raw) throw unavailable();
    const node = SfuNodeAnnouncementSchema.parse(JSON.parse(raw));
    let response: Response;
    try {
      response = await fetch(`${node.url}/sfu/${op}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', [SFU_SECRET_HEADER]: this.secret },
        body: JSON.stringify(request),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch {
      throw unavailable();
    }
    const json: unknown = await response.json().catch(() => ({}));
    const body = RefusalSchema.safeParse(json).data ?? {};
    if (response.status === 400) {
      // Only the node's own declared refusals pass through; anything else is a refusal without detail.
      const refusal = declaredError(body.code ?? '');
      throw (refusal?.area === 'sfu' ? refusal : SfuErrors.MEDIA_REJECTED)(body.message ? { message: body.message } : {});
    }
    if (!response.ok) throw unavailable();
    // The node answers with the operation's response type (sfu-node.ts builds it from the same SfuOps).
    return json as SfuOps[K]['response'];
  }
}
