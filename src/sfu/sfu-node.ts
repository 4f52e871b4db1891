import { randomUUID, timingSafeEqual, createHash } from 'node:crypto';
import { Gauge, type Registry } from 'prom-client';
import { existsSync } from 'node:fs';
import http from 'node:http';
import type { types as ms } from 'mediasoup';
import type { Config } from '../platform/config.js';
import type { Platform } from '../platform/platform.js';
import { CommonErrors } from '../platform/common.errors.js';
import type { CodedError } from '../platform/errors.js';
import { SfuErrors } from './sfu.errors.js';
import {
  SFU_ANNOUNCE_EVERY_MS,
  SFU_NODE_TTL_MS,
  SFU_OPS,
  SFU_SECRET_HEADER,
  type ProducerInfo,
  type SfuNodeAnnouncement,
  type SfuOp,
  type SfuOps,
  type TransportInfo,
} from './protocol.js';

/** The codecs every call's router offers: Opus for audio, VP8 and H.264 (baseline) for video. */
const MEDIA_CODECS: ms.RtpCodecCapability[] = [
  { kind: 'audio', mimeType: 'audio/opus', clockRate: 48_000, channels: 2 },
  { kind: 'video', mimeType: 'video/VP8', clockRate: 90_000 },
  {
    kind: 'video',
    mimeType: 'video/H264',
    clockRate: 90_000,
    parameters: { 'packetization-mode': 1, 'profile-level-id': '42e01f', 'level-asymmetry-allowed': 1 },
  },
];

const MAX_BODY_BYTES = 64 * 1024;

/**
 * What one device may hold in one call: a send and a receive transport with room for a renegotiation
 * each; microphone, camera and screen (and one spare); and one consumer per producer of everyone else.
 * Each transport takes media ports, so these bound what one device can take from the node.
 */
export const SFU_LIMITS = { transportsPerDevice: 4, producersPerDevice: 4, consumersPerDevice: 200 } as const;

/** A refusal the api answers as 400 with this code. */
class Refusal extends Error {
  readonly code: string;

  constructor(error: CodedError, message = error.message) {
    super(message);
    this.code = error.code;
  }
}

interface PeerState {
  userId?: string;
  transports: Map<string, ms.Transport>;
  producers: Map<string, ms.Producer>;
  consumers: Map<string, ms.Consumer>;
  /** Creations under way (between the limit's check and the map's set, mediasoup is awaited): counted with the maps. */
  pending: { transports: number; producers: number; consumers: number };
}

/**
 * Runs `create` for one more of a device's `what`, refused (MEDIA_LIMIT) past `limit` counting those
 * already made and those under way, so concurrent requests cannot pass the limit together.
 */
async function withinPeerLimit<T>(peer: PeerState, what: 'transports' | 'producers' | 'consumers', limit: number, refusal: string, create: () => Promise<T>): Promise<T> {
  if (peer[what].size + peer.pending[what] >= limit) throw new Refusal(SfuErrors.MEDIA_LIMIT, refusal);
  peer.pending[what]++;
  try {
    return await create();
  } finally {
    peer.pending[what]--;
  }
}

interface CallState {
  router: ms.Router;
  peers: Map<string, PeerState>;
}

/**
 * The calls this node holds: one mediasoup router per call on the least busy worker, each device's
 * transports, producers and consumers, and the control operations on them.
 */
export class SfuRouters {
  private readonly calls = new Map<string, CallState>();
  private readonly pending = new Map<string, Promise<CallState>>();

  constructor(
    private readonly workers: ms.Worker[],
    private readonly listen: { ip: string; announcedAddress?: string },
  ) {}

  /** Calls with a router on this node (what the node announces as its load). */
  get size(): number {
    return this.calls.size;
  }

  private listenInfo(protocol: 'udp' | 'tcp'): ms.TransportListenInfo {
    return { protocol, ip: this.listen.ip, ...(this.listen.announcedAddress ? { announcedAddress: this.listen.announcedAddress } : {}) };
  }


  /** The call's router, created on first use on the least busy worker. */
  private async callState(callId: string): Promise<CallState> {
    const existing = this.calls.get(callId);
    if (existing) return existing;
    const inFlight = this.pending.get(callId);
    if (inFlight) return inFlight;
    const creating = (async () => {
      const [first, ...rest] = this.liveWorkers;
      if (!first) throw new Error('no live mediasoup worker on this node');
      const worker = rest.reduce((best, w) => (this.routersOn(w) < this.routersOn(best) ? w : best), first);
      const router = await worker.createRouter({ mediaCodecs: MEDIA_CODECS, appData: { callId, worker: this.workers.indexOf(worker) } });
      const state: CallState = { router, peers: new Map() };
      this.calls.set(callId, state);
      return state;
    })();
    this.pending.set(callId, creating);
    try {
      return await creating;
    } finally {
      this.pending.delete(callId);
    }
  }
  /**
   * A worker died: the routers it held are gone with it. Forgets their calls and returns their ids;
   * `replacement` takes the dead worker's place for new calls.
   */
  workerDied(dead: ms.Worker, replacement?: ms.Worker): string[] {
    const index = this.workers.indexOf(dead);
    const lost = [...this.calls.entries()].filter(([, call]) => call.router.appData.worker === index).map(([callId]) => callId);
    for (const callId of lost) this.calls.delete(callId);
    if (replacement) this.workers[index] = replacement;
    return lost;
  }

  private get liveWorkers(): ms.Worker[] {
    return this.workers.filter((worker) => !worker.died && !worker.closed);
  }

  /** Whether a worker is left to take calls. */
  get hasWorkers(): boolean {
    return this.liveWorkers.length > 0;
  }

  private routersOn(worker: ms.Worker): number {
    return [...this.calls.values()].filter((c) => c.router.appData.worker === this.workers.indexOf(worker)).length;
  }

  private peer(state: CallState, deviceId: string): PeerState {
    let found = state.peers.get(deviceId);
    if (!found) {
      found = { transports: new Map(), producers: new Map(), consumers: new Map(), pending: { transports: 0, producers: 0, consumers: 0 } };
      state.peers.set(deviceId, found);
    }
    return found;
  }

  private existingCall(callId: string): CallState {
    const state = this.calls.get(callId);
    if (!state) throw new Refusal(SfuErrors.MEDIA_NOT_FOUND, 'This call has no media session yet');
    return state;
  }

  private transportOf(state: CallState, deviceId: string, transportId: string): ms.Transport {
    const transport = state.peers.get(deviceId)?.transports.get(transportId);
    if (!transport) throw new Refusal(SfuErrors.TRANSPORT_NOT_FOUND, 'No such transport of this device in the call');
    return transport;
  }

  private static producerInfo = (producer: ms.Producer): ProducerInfo => ({
    producerId: producer.id,
    deviceId: String(producer.appData.deviceId),
    userId: String(producer.appData.userId),
    kind: producer.kind,
  });

  /** One function per control operation, as the api sends them. */
  readonly handlers: { [K in SfuOp]: (request: SfuOps[K]['request']) => Promise<SfuOps[K]['response']> } = {
    capabilities: async ({ callId }) => {
      return { rtpCapabilities: (await this.callState(callId)).router.rtpCapabilities };
    },

    transport: async ({ callId, deviceId, direction, type }) => {
      const state = await this.callState(callId);
      const peer = this.peer(state, deviceId);
      return withinPeerLimit(peer, 'transports', SFU_LIMITS.transportsPerDevice, `A device holds at most ${SFU_LIMITS.transportsPerDevice} transports in a call`, async () => {
        const appData = { deviceId, direction };
        let info: TransportInfo;
        let transport: ms.Transport;
        if (type === 'plain') {
          // Plain RTP for server-side participants (gateways, recorders): a sender is found by its
          // first packet (comedia); a receiver says where to send with connect.
          const plain = await state.router.createPlainTransport({ listenInfo: this.listenInfo('udp'), rtcpMux: true, comedia: direction === 'send', appData });
          transport = plain;
          info = { id: plain.id, type, direction, ip: plain.tuple.localAddress ?? plain.tuple.localIp, port: plain.tuple.localPort };
        } else {
          const webrtc = await state.router.createWebRtcTransport({ listenInfos: [this.listenInfo('udp'), this.listenInfo('tcp')], enableUdp: true, enableTcp: true, preferUdp: true, appData });
          transport = webrtc;
          info = { id: webrtc.id, type, direction, iceParameters: webrtc.iceParameters, iceCandidates: webrtc.iceCandidates, dtlsParameters: webrtc.dtlsParameters };
        }
        peer.transports.set(transport.id, transport);
        return info;
      });
    },

    connect: async ({ callId, deviceId, transportId, dtlsParameters, ip, port }) => {
      const transport = this.transportOf(this.existingCall(callId), deviceId, transportId);
      if (transport.constructor.name === 'PlainTransport') {
        if (!ip || port === undefined) throw new Refusal(SfuErrors.MEDIA_REJECTED, 'A plain transport connects to an ip and port');
        await transport.connect({ ip, port });
      } else {
        if (!dtlsParameters) throw new Refusal(SfuErrors.MEDIA_REJECTED, 'A WebRTC transport connects with dtlsParameters');
        await transport.connect({ dtlsParameters });
      }
      return {};
    },

    produce: async ({ callId, deviceId, userId, transportId, kind, rtpParameters }) => {
      const state = this.existingCall(callId);
      const transport = this.transportOf(state, deviceId, transportId);
      if (transport.appData.direction !== 'send') throw new Refusal(SfuErrors.MEDIA_REJECTED, 'Produce on a send transport');
      const owner = this.peer(state, deviceId);
      return withinPeerLimit(owner, 'producers', SFU_LIMITS.producersPerDevice, `A device sends at most ${SFU_LIMITS.producersPerDevice} streams in a call`, async () => {
        // Cast: checked by the api against its schema; mediasoup checks the rest.
        const producer = await transport.produce({ kind, rtpParameters: rtpParameters as ms.RtpParameters, appData: { deviceId, userId } });
        owner.userId = userId;
        owner.producers.set(producer.id, producer);
        producer.observer.once('close', () => owner.producers.delete(producer.id));
        return SfuRouters.producerInfo(producer);
      });
    },

    consume: async ({ callId, deviceId, transportId, producerId, rtpCapabilities }) => {
      const state = this.existingCall(callId);
      const transport = this.transportOf(state, deviceId, transportId);
      if (transport.appData.direction !== 'recv') throw new Refusal(SfuErrors.MEDIA_REJECTED, 'Consume on a receive transport');
      const owner = [...state.peers.entries()].find(([, p]) => p.producers.has(producerId));
      if (!owner) throw new Refusal(SfuErrors.PRODUCER_NOT_FOUND, 'No such producer in the call');
      if (owner[0] === deviceId) throw new Refusal(SfuErrors.MEDIA_REJECTED, 'A device does not consume its own media');
      // Checked by the api against its schema; mediasoup checks the rest.
      const capabilities = rtpCapabilities as ms.RtpCapabilities;
      if (!state.router.canConsume({ producerId, rtpCapabilities: capabilities })) {
        throw new Refusal(SfuErrors.MEDIA_REJECTED, 'These capabilities cannot receive that producer');
      }
      const mine = this.peer(state, deviceId);
      return withinPeerLimit(mine, 'consumers', SFU_LIMITS.consumersPerDevice, `A device receives at most ${SFU_LIMITS.consumersPerDevice} streams in a call`, async () => {
        // Paused until the device says it is ready, so it misses no key frame.
        const consumer = await transport.consume({ producerId, rtpCapabilities: capabilities, paused: true });
        mine.consumers.set(consumer.id, consumer);
        consumer.observer.once('close', () => mine.consumers.delete(consumer.id));
        return { consumerId: consumer.id, producerId, kind: consumer.kind, rtpParameters: consumer.rtpParameters };
      });
    },

    resume: async ({ callId, deviceId, consumerId }) => {
      const consumer = this.existingCall(callId).peers.get(deviceId)?.consumers.get(consumerId);
      if (!consumer) throw new Refusal(SfuErrors.CONSUMER_NOT_FOUND, 'No such consumer of this device in the call');
      await consumer.resume();
      return {};
    },

    producers: async ({ callId }) => {
      const state = this.calls.get(callId);
      return { producers: state ? [...state.peers.values()].flatMap((p) => [...p.producers.values()].map(SfuRouters.producerInfo)) : [] };
    },

    leave: async ({ callId, deviceId }) => {
      const state = this.calls.get(callId);
      const gone = state?.peers.get(deviceId);
      if (!state || !gone) return { closedProducerIds: [] };
      const closedProducerIds = [...gone.producers.keys()];
      for (const transport of gone.transports.values()) transport.close();
      state.peers.delete(deviceId);
      return { closedProducerIds };
    },

    close: async ({ callId }) => {
      this.calls.get(callId)?.router.close();
      this.calls.delete(callId);
      return {};
    },
  };
}

export interface SfuNode {
  id: string;
  url: string;
  /** The process ids of the node's mediasoup workers (the tests kill one). */
  workerPids(): number[];
  close(): Promise<void>;
}

/** Whether this machine has a mediasoup worker binary to run (mediasoup is an optional dependency). */
export async function mediasoupAvailable(config: Config): Promise<boolean> {
  if (config.MEDIASOUP_WORKER_BIN) process.env.MEDIASOUP_WORKER_BIN = config.MEDIASOUP_WORKER_BIN;
  try {
    const mediasoup = await import('mediasoup');
    return existsSync(mediasoup.workerBin);
  } catch {
    return false;
  }
}

/**
 * The sfu role: mediasoup workers holding one router per room call, driven by the api over a
 * small authenticated HTTP control API, and announced in Redis so the api can pick a node.
 */
export async function startSfuNode(platform: Pick<Platform, 'config' | 'logger' | 'redis' | 'keys'>, options: { port?: number; metrics?: Registry } = {}): Promise<SfuNode> {
  const { config, logger, redis } = platform;
  if (!(await mediasoupAvailable(config))) {
    throw new Error('no mediasoup worker binary: run `npm start` or `npm test` once to build it, or set MEDIASOUP_WORKER_BIN');
  }
  const mediasoup = await import('mediasoup');
  const keys = platform.keys.sfu;
  const workers: ms.Worker[] = [];
  let closing = false;
  const createWorker = async (): Promise<ms.Worker> => {
    const worker = await mediasoup.createWorker({ logLevel: 'warn', rtcMinPort: config.SFU_RTC_MIN_PORT, rtcMaxPort: config.SFU_RTC_MAX_PORT, disableLiburing: true });
    worker.on('died', (error) => void onWorkerDied(worker, error));
    return worker;
  };
  /**
   * A media worker died (a crash, or killed): the calls it carried lost their media. They are
   * reported at once for the worker role to end as FAILED, and a new worker takes the dead one's
   * place; if none can be started and no worker is left, the node stops announcing itself, so no
   * new call is placed on it.
   */
  const onWorkerDied = async (dead: ms.Worker, error: Error) => {
    logger.error({ err: error, pid: dead.pid }, 'mediasoup worker died');
    if (closing) return;
    const replacement = await createWorker().catch((startError: unknown) => {
      logger.error({ err: startError }, 'mediasoup worker could not be restarted');
      return undefined;
    });
    const lost = routers.workerDied(dead, replacement);
    if (!routers.hasWorkers) await stopAnnouncing();
    if (lost.length > 0) await redis.sadd(keys.failedCalls, ...lost).catch((reportError: unknown) => logger.error({ err: reportError, calls: lost.length }, 'could not report the calls a dead worker carried'));
    logger.warn({ lostCalls: lost.length, restarted: Boolean(replacement) }, 'mediasoup worker replaced');
  };
  for (let i = 0; i < config.SFU_WORKERS; i++) workers.push(await createWorker());
  const id = randomUUID();
  const secret = createHash('sha256').update(config.SFU_SECRET).digest();
  const routers = new SfuRouters(workers, { ip: config.SFU_LISTEN_IP, ...(config.SFU_ANNOUNCED_ADDRESS ? { announcedAddress: config.SFU_ANNOUNCED_ADDRESS } : {}) });
  const { handlers } = routers;
  const registers = options.metrics ? [options.metrics] : [];
  new Gauge({ name: 'sfu_workers', help: 'mediasoup workers alive on this sfu node', registers, collect() { this.set(workers.filter((worker) => !worker.closed && !worker.died).length); } });
  new Gauge({ name: 'sfu_routers', help: 'Routers (one per room call) on this sfu node', registers, collect() { this.set(routers.size); } });

  const server = http.createServer((request, response) => {
    const reply = (status: number, body: unknown) => {
      response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    };
    const name = request.url?.startsWith('/sfu/') ? request.url.slice('/sfu/'.length) : undefined;
    const op = SFU_OPS.find((known) => known === name);
    if (request.method !== 'POST' || !op) return reply(404, { code: CommonErrors.NOT_FOUND.code, message: 'No such operation' });
    const given = createHash('sha256').update(String(request.headers[SFU_SECRET_HEADER] ?? '')).digest();
    if (!timingSafeEqual(given, secret)) return reply(401, { code: CommonErrors.UNAUTHORIZED.code, message: 'Bad control secret' });
    const chunks: Buffer[] = [];
    let size = 0;
    request.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) request.destroy();
      else chunks.push(chunk);
    });
    request.on('end', () => {
      void (async () => {
        try {
          // Cast: the api sends each operation's request as SfuOps types it (the client below is the only caller).
          const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as never;
          reply(200, await (handlers[op] as (request: never) => Promise<unknown>)(body));
        } catch (error) {
          // mediasoup throws TypeError for parameters it cannot use: the device's mistake, not ours.
          if (error instanceof Refusal) reply(400, { code: error.code, message: error.message });
          else if (error instanceof TypeError || error instanceof SyntaxError) reply(400, { code: SfuErrors.MEDIA_REJECTED.code, message: error.message });
          else {
            logger.error({ err: error, op }, 'sfu operation failed');
            reply(500, { code: SfuErrors.SFU_FAILED.code, message: SfuErrors.SFU_FAILED.message });
          }
        }
      })();
    });
  });
  await new Promise<void>((resolve) => server.listen(options.port ?? config.SFU_CONTROL_PORT, config.HOST, resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : (options.port ?? config.SFU_CONTROL_PORT);
  const url = config.SFU_CONTROL_URL ?? `http://${config.HOST === '0.0.0.0' ? '127.0.0.1' : config.HOST}:${port}`;

  const announce = async () => {
    const announcement: SfuNodeAnnouncement = { id, url, routers: routers.size };
    await redis.multi().sadd(keys.nodes, id).set(keys.node(id), JSON.stringify(announcement), 'PX', SFU_NODE_TTL_MS).exec();
  };
  const stopAnnouncing = async () => {
    clearInterval(timer);
    await redis.multi().srem(keys.nodes, id).del(keys.node(id)).exec().catch(() => undefined);
  };
  await announce();
  const timer = setInterval(() => void announce().catch((error: unknown) => logger.warn({ err: error }, 'sfu announce failed')), SFU_ANNOUNCE_EVERY_MS);
  timer.unref();
  logger.info({ id, url, workers: workers.length }, 'sfu node started');

  return {
    id,
    url,
    workerPids: () => workers.map((worker) => worker.pid),
    async close() {
      closing = true;
      await stopAnnouncing();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
      for (const worker of workers) worker.close();
    },
  };
}
