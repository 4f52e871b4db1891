// A load-generator process for bench/realtime.mjs. Speaks the socket.io wire protocol (engine.io v4,
// socket.io v5) over plain `ws` sockets: far cheaper per socket than socket.io-client, so the load
// generator is less often the bottleneck on two cores. The tests use the real socket.io-client.
import WebSocket from 'ws';

const now = () => performance.timeOrigin + performance.now();
let sockets = [];
let latencies = [];
/** Device events received (frames with a `seq` envelope), counted for bench:scale. */
let deviceEvents = 0;

const MESSAGE_NEW = Buffer.from('42["message.new",');
// Emitted broadcasts carry `sentAt`; posted messages carry it in their text ("sent:<ms>").
const SENT_AT = Buffer.from('"sentAt":');
const SENT_TEXT = Buffer.from('"sent:');

/** The number written right after `marker` in `buffer`, or undefined. */
function numberAfter(buffer, marker) {
  const at = buffer.indexOf(marker);
  if (at < 0) return undefined;
  let end = at + marker.length;
  while (end < buffer.length && ((buffer[end] >= 0x30 && buffer[end] <= 0x39) || buffer[end] === 0x2e)) end++;
  const value = Number(buffer.toString('latin1', at + marker.length, end));
  return Number.isFinite(value) && end > at + marker.length ? value : undefined;
}

function open(port, token) {
  return new Promise((resolve) => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/socket.io/?EIO=4&transport=websocket`, { perMessageDeflate: false });
    const conn = { ws, connected: false, acks: new Map(), nextAck: 0 };
    ws.on('message', (raw) => {
      // Broadcasts, thousands a second per process, are timed without decoding the whole frame: the
      // load generator's own cost per receipt is part of every latency it reports.
      if (raw.length > MESSAGE_NEW.length && raw.compare(MESSAGE_NEW, 0, MESSAGE_NEW.length, 0, MESSAGE_NEW.length) === 0) {
        const sentAt = numberAfter(raw, SENT_AT) ?? numberAfter(raw, SENT_TEXT);
        if (sentAt !== undefined) latencies.push(now() - sentAt);
        return;
      }
      const frame = raw.toString();
      const type = frame[0];
      if (type === '2') return ws.send('3'); // engine.io ping → pong
      if (type === '0') return ws.send(`40${JSON.stringify({ token, lastSeq: 0 })}`); // open → socket.io CONNECT with auth
      if (type !== '4') return;
      const packet = frame[1];
      if (packet === '0') {
        conn.connected = true;
        resolve(conn);
      } else if (packet === '4') {
        resolve(conn); // connect_error
      } else if (packet === '2') {
        const [event, payload] = JSON.parse(frame.slice(2));
        // Emitted broadcasts carry sentAt; posted messages carry it in their text ("sent:<ms>").
        if (event === 'message.new') latencies.push(now() - (payload.sentAt ?? Number(/^sent:([\d.]+)/.exec(payload.message ?? '')?.[1])));
        else if (typeof payload?.seq === 'number') deviceEvents++;
      } else if (packet === '3') {
        const bracket = frame.indexOf('[');
        const id = Number(frame.slice(2, bracket));
        conn.acks.get(id)?.();
        conn.acks.delete(id);
      }
    });
    ws.on('error', () => resolve(conn));
  });
}

// A Pusher-protocol event (soketi's): its data is a JSON string inside the frame, so quotes are escaped.
const PUSHER_EVENT = Buffer.from('{"event":"message.new"');
const PUSHER_SENT_AT = Buffer.from('sentAt\\":');

/** A Pusher-protocol connection (protocol 7, as pusher-js) subscribed to `channel`: connected once the subscription succeeded. */
function openPusher(port, appKey, channel) {
  return new Promise((resolve) => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/app/${appKey}?protocol=7&client=js&version=8.4.0&flash=false`, { perMessageDeflate: false });
    const conn = { ws, connected: false };
    ws.on('message', (raw) => {
      if (raw.length > PUSHER_EVENT.length && raw.compare(PUSHER_EVENT, 0, PUSHER_EVENT.length, 0, PUSHER_EVENT.length) === 0) {
        const sentAt = numberAfter(raw, PUSHER_SENT_AT);
        if (sentAt !== undefined) latencies.push(now() - sentAt);
        return;
      }
      const { event } = JSON.parse(raw.toString());
      if (event === 'pusher:connection_established') ws.send(JSON.stringify({ event: 'pusher:subscribe', data: { channel } }));
      else if (event === 'pusher_internal:subscription_succeeded') {
        conn.connected = true;
        resolve(conn);
      } else if (event === 'pusher:ping') ws.send(JSON.stringify({ event: 'pusher:pong', data: {} }));
      else if (event === 'pusher:error') resolve(conn);
    });
    ws.on('error', () => resolve(conn));
  });
}

/** Targets are `{ port, token }` (the hub, or plain socket.io: socket.io protocol) or `{ port, pusher: { appKey, channel } }`. */
async function connectAll({ targets, concurrency }) {
  let next = 0;
  async function lane() {
    while (next < targets.length) {
      const { port, token, pusher } = targets[next++];
      sockets.push(await (pusher ? openPusher(port, pusher.appKey, pusher.channel) : open(port, token)));
    }
  }
  await Promise.all(Array.from({ length: concurrency }, lane));
  const connected = sockets.filter((s) => s.connected).length;
  return { connected, failed: sockets.length - connected };
}

function ping(conn, body) {
  return new Promise((resolve) => {
    const id = conn.nextAck++;
    conn.acks.set(id, resolve);
    conn.ws.send(`42${id}${JSON.stringify(['hub.ping', body])}`);
  });
}

async function echo({ durationMs, inflight, bytes }) {
  const body = { pad: 'x'.repeat(bytes) };
  const until = Date.now() + durationMs;
  let done = 0;
  await Promise.all(
    sockets.flatMap((conn) =>
      Array.from({ length: inflight }, async () => {
        while (Date.now() < until) {
          await ping(conn, body);
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
    result = { latencies, deviceEvents };
    latencies = [];
    deviceEvents = 0;
  } else if (message.cmd === 'echo') result = await echo(message);
  else if (message.cmd === 'close') {
    for (const conn of sockets) conn.ws.close();
    sockets = [];
    result = { closed: true };
  }
  process.send({ id: message.id, ...result });
});
