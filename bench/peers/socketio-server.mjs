// One node of plain socket.io as most projects run it, for `npm run bench:peers`: the default `ws`
// engine, the Redis adapter between nodes, every connection in one room, no authentication.
// Broadcasts come through the Redis emitter, as the hub's do. PORT, REDIS_URL, ROOM from the environment.
import http from 'node:http';
import { createAdapter } from '@socket.io/redis-adapter';
import { Redis } from 'ioredis';
import { Server } from 'socket.io';

const pub = new Redis(process.env.REDIS_URL);
const sub = pub.duplicate();
const server = http.createServer();
const io = new Server(server, { adapter: createAdapter(pub, sub) });
io.on('connection', (socket) => void socket.join(process.env.ROOM));
server.listen(Number(process.env.PORT), '127.0.0.1', () => process.stdout.write('socket.io node listening\n'));
process.on('SIGTERM', () => {
  io.close();
  pub.disconnect();
  sub.disconnect();
  process.exit(0);
});
