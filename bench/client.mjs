// `npm run bench:client`: the client library (packages/client, issue 56).
// 1. Its size as an app ships it: minified ESM for browsers, gzipped, the library alone (its two
//    dependencies left to the app's bundler) and with openapi-fetch and socket.io-client bundled in.
// 2. A hub restart as phones see it: CLIENTS library clients (200) hold sockets on one hub (an api node
//    beside it for the REST part of catching up), each with an open room; the hub is stopped (SIGTERM:
//    it drains) and started again on the same port, and each device gets a device event meanwhile.
//    Timed from the stop to each client `connected` again: reconnected, its missed event handled
//    (`inbox.head`), its open room's messages and its chat list fetched again.
// 3. A rolling restart as production runs it: two hubs behind the production nginx (deploy/nginx.conf),
//    the hub holding the clients drained (SIGTERM), the clients back through nginx on the other one.
import { build } from 'esbuild';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { gzipSync } from 'node:zlib';
import { percentile, seedGroupRoom, spawnRole, startBench, stopAll } from './common.mjs';
import { freePort } from '../scripts/stack.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const entry = path.join(root, 'packages', 'client', 'src', 'index.ts');
const CLIENTS = Number(process.env.CLIENTS ?? 200);
const ROOM_SIZE = 5;

async function sizeOf(external) {
  const result = await build({ entryPoints: [entry], bundle: true, minify: true, format: 'esm', platform: 'browser', target: 'es2022', write: false, logLevel: 'error', external });
  const bytes = result.outputFiles[0].contents;
  return { minified: bytes.length, gzipped: gzipSync(bytes, { level: 9 }).length };
}

const hubPort = await freePort();
const bench = await startBench('client', { SOCKET_PORT: String(hubPort) });

const kb = (bytes) => `${(bytes / 1024).toFixed(1)} KB`;
const alone = await sizeOf(['openapi-fetch', 'socket.io-client']);
const whole = await sizeOf([]);
console.log('## Client library size (minified ESM for browsers, esbuild)');
console.log(`library alone: ${kb(alone.minified)} minified, ${kb(alone.gzipped)} gzipped`);
console.log(`with openapi-fetch and socket.io-client: ${kb(whole.minified)} minified, ${kb(whole.gzipped)} gzipped`);

// The library for Node, bundled with its dependencies into one module of the run's own.
const scratch = mkdtempSync(path.join(os.tmpdir(), 'bench-client-'));
const bundled = path.join(scratch, 'client.mjs');
const nodeBuild = await build({ entryPoints: [entry], bundle: true, format: 'esm', platform: 'node', target: 'node20', write: false, logLevel: 'error', external: ['bufferutil', 'utf-8-validate'], banner: { js: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);" } });
writeFileSync(bundled, nodeBuild.outputFiles[0].contents);
const { createChatClient, memoryStore } = await import(pathToFileURL(bundled).href);

const { env, config, ctx, children, port } = bench;
const startHub = async (socketPort = hubPort) => {
  const started = Date.now();
  const opsPort = await freePort();
  const child = await spawnRole('realtime', { ...env, SOCKET_PORT: String(socketPort), OPS_PORT: String(opsPort) }, children);
  return { child, opsPort, ms: Date.now() - started };
};
const stopHub = async (hub) => {
  const exited = new Promise((resolve) => hub.child.once('exit', resolve));
  hub.child.kill('SIGTERM');
  await exited;
};
const clients = [];
let front = null;
/** Each device gets an event while no hub holds it: catching up includes it. */
const eventForEach = (run) =>
  Promise.all(clients.map(({ person }, i) => ctx.events.toDevice(person.deviceId, 'contact.request', { requestId: `r${run}-${i}`, sender: { id: 'bench', deleted: false, displayName: null, avatarUrl: null, avatarThumbnailUrl: null }, customMessage: `run ${run}` })));
const allConnected = async (since) => {
  while (!clients.every((c) => c.connectedAt >= since)) await new Promise((resolve) => setTimeout(resolve, 5));
};
async function makeClients(people, baseUrl, socketUrl) {
  for (const person of people) {
    const store = memoryStore();
    await store.set('chat:session', JSON.stringify({ accessToken: person.token, refreshToken: `${person.deviceId}.unused`, accessExpiresAt: Date.now() + 5 * 3600_000, userId: person.userId, deviceId: person.deviceId }));
    const entry = { client: await createChatClient({ baseUrl, socketUrl, store }), person, connectedAt: 0 };
    entry.client.on('state', (state) => state === 'connected' && (entry.connectedAt = Date.now()));
    clients.push(entry);
  }
  const connectStart = Date.now();
  for (const { client } of clients) client.connect();
  await allConnected(1);
  const ms = Date.now() - connectStart;
  await Promise.all(clients.map(({ client, person }) => client.openRoom(person.room)));
  return ms;
}
try {
  await spawnRole('api', env, children);
  let hub = await startHub();
  const people = [];
  for (let r = 0; r < CLIENTS / ROOM_SIZE; r++) people.push(...(await seedGroupRoom(ctx, config, `bench-room-${r}`, ROOM_SIZE, r * ROOM_SIZE)).map((p) => ({ ...p, room: `bench-room-${r}` })));
  const firstMs = await makeClients(people, `http://127.0.0.1:${port}`, `http://127.0.0.1:${hubPort}`);
  console.log(`\n## A hub restart, ${CLIENTS} clients (each with an open room of ${ROOM_SIZE})`);
  console.log(`first connection, all caught up: ${firstMs} ms`);

  for (let run = 1; run <= 3; run++) {
    const stoppedAt = Date.now();
    await stopHub(hub);
    const downMs = Date.now() - stoppedAt;
    await eventForEach(run);
    hub = await startHub();
    const upAt = Date.now();
    await allConnected(stoppedAt);
    const fromStop = clients.map((c) => c.connectedAt - stoppedAt).sort((a, b) => a - b);
    const fromUp = clients.map((c) => c.connectedAt - upAt).sort((a, b) => a - b);
    const handled = clients.every(({ client }) => client.lastSeq >= run);
    console.log(
      `run ${run}: hub stopped in ${downMs} ms, new hub ready ${upAt - stoppedAt} ms after the stop (process start ${hub.ms} ms); ` +
        `connected and caught up, from the stop: p50 ${percentile(fromStop, 50)} ms, p95 ${percentile(fromStop, 95)} ms, last ${fromStop.at(-1)} ms; ` +
        `from the new hub ready: p50 ${percentile(fromUp, 50)} ms, last ${fromUp.at(-1)} ms; every missed event handled: ${handled}`,
    );
  }

  // A rolling restart as production has it: two hubs behind the production nginx; the hub holding the
  // clients drains, and they reconnect through nginx to the other one.
  await Promise.all(clients.splice(0).map(({ client }) => client.close()));
  const otherPort = await freePort();
  const other = await startHub(otherPort);
  const { startFront } = await import('../dist/test/helpers/nginx.js');
  front = await startFront({ api: [port, port], hubs: [hubPort, otherPort] });
  const behindMs = await makeClients(people, front.url, front.url);
  const { holdsSockets } = await import('../dist/test/helpers/hubs.js');
  const holder = (await holdsSockets(hub)) ? hub : other;
  console.log(`\n## A rolling restart behind nginx, 2 hubs, ${CLIENTS} clients (first connection through nginx, all caught up: ${behindMs} ms)`);
  const stoppedAt = Date.now();
  await stopHub(holder);
  const downMs = Date.now() - stoppedAt;
  await eventForEach(4);
  await allConnected(stoppedAt);
  const fromStop = clients.map((c) => c.connectedAt - stoppedAt).sort((a, b) => a - b);
  console.log(
    `the hub holding them drained and stopped in ${downMs} ms; connected to the other hub and caught up, from the stop: ` +
      `p50 ${percentile(fromStop, 50)} ms, p95 ${percentile(fromStop, 95)} ms, last ${fromStop.at(-1)} ms; every missed event handled: ${clients.every(({ client }) => client.lastSeq >= 4)}`,
  );
} finally {
  // The clients first: nginx stops gracefully only once their WebSockets are closed.
  await Promise.all(clients.map(({ client }) => client.close()));
  await front?.stop();
  await stopAll(children, bench.stack, bench.tmp, ctx);
  rmSync(scratch, { recursive: true, force: true });
}
