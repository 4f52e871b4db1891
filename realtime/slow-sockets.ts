import type { Logger } from '../src/platform/logger.js';
import type { HubServer, HubSocket } from './socket-types.js';

type EngineConnection = {
  /** Packets engine.io holds while its transport is busy (with ws it sends one batch at a time). */
  writeBuffer?: Array<{ data?: unknown }>;
  transport?: { socket?: { getBufferedAmount?: () => number; bufferedAmount?: number } };
};

/** Bytes a socket was given and its client has not taken: engine.io's queue plus the connection's own buffer (uWebSockets.js or ws); 0 once closed. */
export function bufferedBytes(socket: HubSocket): number {
  // Cast: engine.io's public types do not declare its write buffer and transport, which this reads.
  const conn = socket.conn as unknown as EngineConnection;
  let bytes = 0;
  for (const packet of conn.writeBuffer ?? []) bytes += typeof packet.data === 'string' ? packet.data.length : Buffer.isBuffer(packet.data) ? packet.data.length : 0;
  const raw = conn.transport?.socket;
  if (!raw) return bytes;
  try {
    return bytes + (typeof raw.getBufferedAmount === 'function' ? raw.getBufferedAmount() : (raw.bufferedAmount ?? 0));
  } catch {
    // uWebSockets.js throws on a socket it already closed.
    return bytes;
  }
}

export interface SlowSocketLimits {
  /** Above this many unsent bytes a socket is slow: its device events wait in the inbox. */
  slowBytes: number;
  /** A socket slow this long is disconnected. */
  graceMs: number;
  /** At this many unsent bytes a socket is disconnected at once (uWebSockets.js's own limit, and the sweep's). */
  maxBytes: number;
}

/**
 * The hub's policy for sockets that stop reading (a phone in a tunnel): past `slowBytes` the
 * socket's device events are held in its inbox (the delivery asks `isSlow` before each send); once
 * it has been slow for `graceMs`, or holds `maxBytes`, it is disconnected and its memory freed. The
 * client reconnects with its `lastSeq` and gets what it missed from the inbox; room broadcasts it
 * missed it reads as after any reconnect. A sweep every second looks at every socket.
 */
export class SlowSockets {
  private timer: NodeJS.Timeout | null = null;
  private readonly slowSince = new WeakMap<HubSocket, number>();

  constructor(
    private readonly io: HubServer,
    readonly limits: SlowSocketLimits,
    private readonly log: Logger,
    /** Called when a socket that was slow has caught up: its held events are sent. */
    private readonly caughtUp: (socket: HubSocket) => void,
    private readonly now: () => number = Date.now,
  ) {}

  isSlow(socket: HubSocket): boolean {
    return bufferedBytes(socket) > this.limits.slowBytes;
  }

  start(everyMs = 1_000): void {
    this.timer = setInterval(() => this.sweep(), Math.min(everyMs, Math.max(100, this.limits.graceMs / 2)));
    this.timer.unref();
  }

  sweep(): void {
    const now = this.now();
    for (const socket of this.io.of('/').sockets.values()) {
      const bytes = bufferedBytes(socket);
      const since = this.slowSince.get(socket);
      if (bytes <= this.limits.slowBytes) {
        if (since !== undefined) {
          this.slowSince.delete(socket);
          this.caughtUp(socket);
        }
        continue;
      }
      if (since === undefined) this.slowSince.set(socket, now);
      if (bytes >= this.limits.maxBytes || (since !== undefined && now - since >= this.limits.graceMs)) {
        this.log.warn({ deviceId: socket.data.principal.deviceId, bufferedBytes: bytes, slowMs: since === undefined ? 0 : now - since }, 'slow socket disconnected; its events wait in the inbox');
        this.slowSince.delete(socket);
        socket.disconnect(true);
      }
    }
  }

  close(): void {
    if (this.timer) clearInterval(this.timer);
  }
}
