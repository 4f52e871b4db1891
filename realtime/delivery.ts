import { READ_BATCH, type DeviceInbox } from '../src/inbox/index.js';
import type { DeliveryCursor as Cursor, HubSocket as DeviceSocket } from './socket-types.js';

/** The delivery cursor rides on the socket's own `data`, so a socket costs no extra map entry. */
const cursorOf = (socket: DeviceSocket): Cursor | undefined => socket.data.cursor;

/**
 * Sends a device's inbox to its sockets on this node, in order and once each: on connect from the
 * `lastSeq` the device gave, and after every poke. Live and replayed events take the same path, so
 * a replay can never overtake or repeat a live event.
 */
export class InboxDelivery {
  /** A device's sockets on this node: nearly always one, so a small array rather than a Set. */
  private readonly byDevice = new Map<string, DeviceSocket[]>();

  constructor(
    private readonly inbox: DeviceInbox,
    private readonly onError: (error: unknown) => void,
    /** A socket that does not take what it is sent (SlowSockets): its events wait in the inbox until `resume`. */
    private readonly isSlow: (socket: DeviceSocket) => boolean = () => false,
    /** Told of each device event sent to a socket (the hub's metrics). */
    private readonly onSent: () => void = () => undefined,
    /** Told of each `inbox.resync-required` sent, with its reason (the hub's metrics). */
    private readonly onResync: (reason: 'INBOX_RESET' | 'INBOX_BOUND') => void = () => undefined,
  ) {}

  get deviceCount(): number {
    return this.byDevice.size;
  }

  get deviceIds(): IterableIterator<string> {
    return this.byDevice.keys();
  }

  socketsOf(deviceId: string): number {
    return this.byDevice.get(deviceId)?.length ?? 0;
  }

  attach(socket: DeviceSocket, deviceId: string, lastSeq: number): void {
    socket.data.cursor = { sent: lastSeq, running: false, again: false };
    const sockets = this.byDevice.get(deviceId);
    if (sockets) sockets.push(socket);
    else this.byDevice.set(deviceId, [socket]);
    this.kick(socket, deviceId, true);
  }

  /** Forgets the socket; true when it was the device's last socket on this node. */
  detach(socket: DeviceSocket, deviceId: string): boolean {
    socket.data.cursor = undefined;
    const sockets = this.byDevice.get(deviceId);
    const at = sockets?.indexOf(socket) ?? -1;
    if (sockets && at >= 0) sockets.splice(at, 1);
    if (sockets && sockets.length === 0) {
      this.byDevice.delete(deviceId);
      return true;
    }
    return false;
  }

  /** Sends what waited while the socket was slow. */
  resume(socket: DeviceSocket): void {
    this.kick(socket, socket.data.principal.deviceId, false);
  }

  poke(deviceId: string): void {
    for (const socket of this.byDevice.get(deviceId) ?? []) this.kick(socket, deviceId, false);
  }

  private kick(socket: DeviceSocket, deviceId: string, first: boolean): void {
    const cursor = cursorOf(socket);
    if (!cursor) return;
    if (cursor.running) {
      cursor.again = true;
      return;
    }
    cursor.running = true;
    void this.run(socket, deviceId, cursor, first).catch(this.onError);
  }

  private async run(socket: DeviceSocket, deviceId: string, cursor: Cursor, first: boolean): Promise<void> {
    try {
      if (first) await this.checkResync(socket, deviceId, cursor);
      do {
        cursor.again = false;
        for (;;) {
          if (this.isSlow(socket)) return;
          const batch = await this.inbox.readAfter(deviceId, cursor.sent);
          if (batch.length === 0 || !socket.connected) break;
          for (const entry of batch) {
            // Held in the inbox, not queued in memory, while the socket does not read.
            if (this.isSlow(socket)) return;
            // Cast: the inbox stores each event with the data its name gives in DeviceEventMap (appended through the typed emitter).
            socket.emit(entry.event, { seq: entry.seq, at: entry.at, data: entry.data as never });
            cursor.sent = entry.seq;
            this.onSent();
          }
          // A short batch was all there was: an event appended since comes with its own poke (again).
          if (batch.length < READ_BATCH) break;
        }
      } while (cursor.again && socket.connected);
    } finally {
      cursor.running = false;
    }
  }

  /**
   * A device that missed events the bound dropped, or that is ahead of a reset inbox, gets one
   * `inbox.resync-required` carrying the current sequence, and continues from there.
   */
  private async checkResync(socket: DeviceSocket, deviceId: string, cursor: Cursor): Promise<void> {
    const state = await this.inbox.state(deviceId);
    const reason = cursor.sent > state.seq ? 'INBOX_RESET' : state.lost > cursor.sent ? 'INBOX_BOUND' : null;
    if (!reason) return;
    socket.emit('inbox.resync-required', { seq: state.seq, at: new Date().toISOString(), data: { lastSeq: cursor.sent, reason } });
    this.onResync(reason);
    cursor.sent = state.seq;
  }
}
