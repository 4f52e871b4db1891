import http from 'node:http';
import { createAdapter } from '@socket.io/redis-adapter';
import { Server, type Socket } from 'socket.io';
import uws from 'uWebSockets.js';
import type { Principal } from '../src/auth/principal.js';
import type { AppContext } from '../src/context.js';
import { deviceRoom, socketKey, userRoom } from '../src/events.js';

export type SocketEngine = 'uws' | 'ws';

interface SocketData {
  principal: Principal;
}

export interface Hub {
  io: Server;
  port: number;
  close(): Promise<void>;
}

/**
 * The realtime role: socket.io on uWebSockets.js (or plain `ws`), joined to the other hub nodes by
 * the Redis adapter. The handshake uses the same token check as REST.
 */
export async function startHub(ctx: AppContext, options: { host: string; port: number; engine: SocketEngine }): Promise<Hub> {
  const io = new Server<Record<string, never>, Record<string, never>, Record<string, never>, SocketData>({
    path: '/socket.io/',
    serveClient: false,
    transports: ['websocket', 'polling'],
    pingInterval: 25_000,
    pingTimeout: 20_000,
  });
  const pub = ctx.redis.duplicate();
  const sub = ctx.redis.duplicate();
  io.adapter(createAdapter(pub, sub, { key: socketKey(ctx.config.REDIS_PREFIX) }));

  io.use((socket, next) => {
    const token = (socket.handshake.auth as { token?: unknown } | undefined)?.token;
    if (typeof token !== 'string' || token.length === 0) return next(new Error('UNAUTHORIZED'));
    ctx.services.auth.authenticate(token).then(
      (principal) => {
        socket.data.principal = principal;
        next();
      },
      () => next(new Error('UNAUTHORIZED')),
    );
  });

  io.on('connection', (socket: Socket) => {
    const { principal } = socket.data as SocketData;
    void socket.join([deviceRoom(principal.deviceId), userRoom(principal.userId)]);
  });

  const log = ctx.logger.child({ role: 'realtime' });
  let port: number;
  let closeListener: () => Promise<void>;
  if (options.engine === 'uws') {
    const app = uws.App();
    io.attachApp(app);
    const listenSocket = await new Promise<uws.us_listen_socket>((resolve, reject) => {
      app.listen(options.host, options.port, (socket) => (socket ? resolve(socket) : reject(new Error(`cannot listen on ${options.host}:${options.port}`))));
    });
    port = uws.us_socket_local_port(listenSocket);
    closeListener = async () => uws.us_listen_socket_close(listenSocket);
  } else {
    const server = http.createServer();
    io.attach(server);
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port, options.host, () => resolve());
    });
    const address = server.address();
    port = typeof address === 'object' && address ? address.port : options.port;
    closeListener = () => new Promise((resolve) => server.close(() => resolve()));
  }
  log.info({ port, engine: options.engine }, 'socket hub listening');

  return {
    io,
    port,
    async close() {
      io.disconnectSockets(true);
      await closeListener();
      await new Promise<void>((resolve) => io.close(() => resolve()));
      await Promise.allSettled([pub.quit(), sub.quit()]);
    },
  };
}
