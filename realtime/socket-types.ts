import type { Server, Socket } from 'socket.io';
import type { ClientToServerEvents, ServerToClientEvents } from '../src/platform/device-events.js';
import type { Principal } from '../src/platform/principal.js';

/** Where a socket's inbox delivery stands. */
export interface DeliveryCursor {
  /** Highest sequence sent on this socket. */
  sent: number;
  /** Delivery runs one at a time per socket; a poke during a run asks for another. */
  running: boolean;
  again: boolean;
}

/** What the hub keeps on each socket: who it is (set at the handshake) and its delivery cursor. */
export interface SocketData {
  principal: Principal;
  cursor?: DeliveryCursor;
  /** The last typing.start relayed from this socket: one per room every TYPING_INTERVAL_MS. */
  typing?: { roomId: string; at: number };
}

export type HubServer = Server<ClientToServerEvents, ServerToClientEvents, Record<string, never>, SocketData>;
export type HubSocket = Socket<ClientToServerEvents, ServerToClientEvents, Record<string, never>, SocketData>;
