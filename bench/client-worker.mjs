// A load-generator process for bench/realtime.mjs: opens device sockets, records the latency of room
// broadcasts, and runs hub.ping echo loops. Driven over IPC by the orchestrator.
import { io } from 'socket.io-client';

const now = () => performance.timeOrigin + performance.now();
let sockets = [];
let latencies = [];

async function connectAll({ targets, concurrency }) {
  let next = 0;
  let failed = 0;
  async function lane() {
    while (next < targets.length) {
      const { port, token } = targets[next++];
      const socket = io(`http://127.0.0.1:${port}`, {
        path: '/socket.io/',
        transports: ['websocket'],
        auth: { token, lastSeq: 0 },
        reconnection: false,
        forceNew: true,
      });
      socket.on('message.new', (payload) => latencies.push(now() - payload.sentAt));
      await new Promise((resolve) => {
        socket.once('connect', resolve);
        socket.once('connect_error', () => {
          failed++;
          resolve();
        });
      });
      sockets.push(socket);
    }
  }
  await Promise.all(Array.from({ length: concurrency }, lane));
  return { connected: sockets.filter((s) => s.connected).length, failed };
}

async function echo({ durationMs, inflight, bytes }) {
  const body = { pad: 'x'.repeat(bytes) };
  const until = Date.now() + durationMs;
  let done = 0;
  await Promise.all(
    sockets.flatMap((socket) =>
      Array.from({ length: inflight }, async () => {
        while (Date.now() < until) {
          await new Promise((resolve) => socket.emit('hub.ping', body, resolve));
          done++;
        }
      }),
    ),
  );
  return { echoes: done };
}

process.on('message', async (message) => {
  let result;
  if (message.cmd === 'connect') result = await connectAll(message);
  else if (message.cmd === 'latencies') {
    result = { latencies };
    latencies = [];
  } else if (message.cmd === 'echo') result = await echo(message);
  else if (message.cmd === 'close') {
    for (const socket of sockets) socket.disconnect();
    sockets = [];
    result = { closed: true };
  }
  process.send({ id: message.id, ...result });
});
