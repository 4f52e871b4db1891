// `npm run bench:scale`: whether a hub's work grows with its own sockets, not with the deployment's
// traffic (docs/operators/scaling.md). The same sockets and the same load (posts to many small rooms
// and device events, sent as the api sends them) over 1, 2, 4 and 8 hub nodes: the hubs' total CPU
// per delivered event for each. Then three hubs of which one holds every socket: the CPU of the two
// that hold no recipient against the busy one's. Hub CPU is read from /proc. Prints one table.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { cpuMs, forkWorker, netOfUpkeep, seedMembers, spawnHub as spawnBenchHub, startBench, stopAll, stopHub, sum } from './common.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const HUB_COUNTS = (process.env.HUB_COUNTS ?? '1,2,4,8').split(',').filter(Boolean).map(Number);
const SOCKETS = Number(process.env.SOCKETS ?? 800);
const ROOM_SIZE = Number(process.env.ROOM_SIZE ?? 5);
const POSTS_PER_SECOND = Number(process.env.POSTS_PER_SECOND ?? 300);
const DEVICE_EVENTS_PER_SECOND = Number(process.env.DEVICE_EVENTS_PER_SECOND ?? 100);
const SECONDS = Number(process.env.SECONDS ?? 10);
// Room broadcasts alone, at a rate where the hubs' upkeep is a small part of their CPU (issue 55).
const BROADCAST_HUB_COUNTS = (process.env.BROADCAST_HUB_COUNTS ?? '2,8').split(',').filter(Boolean).map(Number);
const BROADCASTS_PER_SECOND = Number(process.env.BROADCASTS_PER_SECOND ?? 1000);

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const log = (message) => process.stderr.write(`[bench] ${message}\n`);
const roomOf = (i) => `scale-room-${Math.floor(i / ROOM_SIZE)}`;

const { tmp, stack, env, config, ctx, children } = await startBench('scale');

const spawnHub = () => spawnBenchHub(env, children, 'uws');

/**
 * Sends the load for SECONDS: posts to random rooms (a broadcast each, as the api's emitter sends
 * it) and device events to random devices (inbox, then a poke of the hubs holding the device).
 * Resolves with how many deliveries it should make.
 */
async function load(people, deviceEventsPerSecond = DEVICE_EVENTS_PER_SECOND, postsPerSecond = POSTS_PER_SECOND) {
  const rooms = Math.ceil(people.length / ROOM_SIZE);
  const tick = 20;
  const perTick = (rate) => (rate * tick) / 1000;
  let posts = 0;
  let events = 0;
  const postedTo = [];
  const pending = [];
  const started = Date.now();
  for (let step = 0; Date.now() - started < SECONDS * 1000; step++) {
    while (posts < perTick(postsPerSecond) * (step + 1)) {
      const room = `scale-room-${Math.floor(Math.random() * rooms)}`;
      ctx.events.toRoom(room, 'message.new', { roomId: room, messageId: `m-${posts}`, sentAt: performance.timeOrigin + performance.now() });
      postedTo.push(room);
      posts++;
    }
    while (events < perTick(deviceEventsPerSecond) * (step + 1)) {
      const person = people[Math.floor(Math.random() * people.length)];
      pending.push(ctx.events.toDevice(person.deviceId, 'call.signal', { callId: 'bench', fromDeviceId: 'peer', kind: 'candidate', payload: { i: events } }));
      events++;
    }
    await sleep(Math.max(0, started + (step + 1) * tick - Date.now()));
  }
  await Promise.all(pending);
  const membersPerRoom = people.length / rooms;
  return { posts, events, postedTo, expected: Math.round(posts * membersPerRoom) + events };
}

/**
 * Connects `people` (person i to hub `placeOf(i)`), reads each hub's CPU over a window without load
 * (its upkeep: timers, probes, metrics, the sockets' pings), then over a window of the same length
 * with the load; `cpu` is the loaded window's, `net` the same less the upkeep.
 */
async function measure(hubs, people, placeOf, deviceEventsPerSecond = DEVICE_EVENTS_PER_SECOND, postsPerSecond = POSTS_PER_SECOND) {
  const clients = [forkWorker(path.join(root, 'bench/client-worker.mjs'), children), forkWorker(path.join(root, 'bench/client-worker.mjs'), children)];
  const targets = people.map((person, i) => ({ port: hubs[placeOf(i)].port, token: person.token }));
  const half = Math.ceil(targets.length / 2);
  const connected = (await Promise.all(clients.map((c, i) => c.call({ cmd: 'connect', targets: targets.slice(i * half, (i + 1) * half), concurrency: 50 })))).reduce((sum, r) => sum + r.connected, 0);
  await sleep(2000);
  await Promise.all(clients.map((c) => c.call({ cmd: 'latencies' })));
  /** Each hub's CPU over a window of `ms` without load, and how long the window really was. */
  const idle = async (ms) => {
    const start = hubs.map((hub) => cpuMs(hub.pid));
    const started = Date.now();
    await sleep(ms);
    return { elapsed: Date.now() - started, cpu: hubs.map((hub, i) => cpuMs(hub.pid) - start[i]) };
  };
  const { elapsed: quietMs, cpu: upkeep } = await idle(SECONDS * 1000 + 1500);
  const before = hubs.map((hub) => cpuMs(hub.pid));
  const loadStarted = Date.now();
  const sent = await load(people, deviceEventsPerSecond, postsPerSecond);
  await sleep(1500);
  const cpu = hubs.map((hub, i) => cpuMs(hub.pid) - before[i]);
  const scale = (Date.now() - loadStarted) / quietMs;
  // A second quiet window after the load: the first may still hold the connection storm's collections
  // (the memory saver's), so each hub's upkeep is the lesser of the two.
  const after = await idle(quietMs);
  after.cpu.forEach((ms, i) => {
    upkeep[i] = Math.min(upkeep[i], (ms * quietMs) / after.elapsed);
  });
  // Per hub: a hub holding no recipient spends about its upkeep, so its net is near 0 (floored there).
  const net = cpu.map((ms, i) => Math.max(0, ms - upkeep[i] * scale));
  // In all: null when the upkeep subtracted is half the hubs' CPU or more (see netOfUpkeep).
  const netInAll = netOfUpkeep(sum(cpu), sum(upkeep) * scale);
  const counts = await Promise.all(clients.map((c) => c.call({ cmd: 'latencies' })));
  const delivered = counts.reduce((sum, r) => sum + r.latencies.length + r.deviceEvents, 0);
  await Promise.all(clients.map((c) => c.call({ cmd: 'close' })));
  clients.forEach((c) => c.kill());
  await sleep(1000);
  // The messages the hubs received: each post reaches every hub holding a member of its room (one
  // room broadcast each), each device event the one hub holding the device (a poke).
  const hubsOf = new Map();
  people.forEach((person, i) => hubsOf.set(person.room, (hubsOf.get(person.room) ?? new Set()).add(placeOf(i))));
  const broadcastsReceived = sum(sent.postedTo.map((room) => hubsOf.get(room).size));
  return { connected, cpu, net, netInAll, delivered, broadcastsReceived, ...sent };
}

const rows = [];
try {
  log(`seeding ${SOCKETS} members in rooms of ${ROOM_SIZE}`);
  const people = await seedMembers(ctx, config, SOCKETS, roomOf);
  // Sockets are placed at random over the hubs, as a load balancer places them.
  const shuffled = people.map((person) => [Math.random(), person]).sort((a, b) => a[0] - b[0]).map(([, person]) => person);
  const perDelivery = {};
  for (const count of HUB_COUNTS) {
    const hubs = await Promise.all(Array.from({ length: count }, spawnHub));
    await sleep(1000);
    const run = await measure(hubs, shuffled, (i) => i % count);
    perDelivery[count] = { gross: (1000 * sum(run.cpu)) / run.delivered, net: run.netInAll === null ? null : (1000 * run.netInAll) / run.delivered };
    rows.push([
      `${count} hub node${count === 1 ? '' : 's'}, ${run.connected} sockets`,
      `${run.posts} posts, ${run.events} device events; ${run.delivered} of ${run.expected} deliveries`,
      `hub CPU ${(sum(run.cpu) / 1000).toFixed(2)} s in all: ${perDelivery[count].gross.toFixed(1)} µs per delivery; net of the hubs' upkeep ${perDelivery[count].net === null ? 'not measurable (the upkeep is half the CPU or more)' : `${perDelivery[count].net.toFixed(1)} µs`}`,
    ]);
    log(rows.at(-1).join(' | '));
    await Promise.all(hubs.map(stopHub));
  }
  if (perDelivery[2] && perDelivery[8]) {
    const netRatio = perDelivery[8].net === null || perDelivery[2].net === null ? 'not measurable' : `${(perDelivery[8].net / perDelivery[2].net).toFixed(2)}×`;
    rows.push(['hub CPU per delivery, 8 hubs / 2 hubs', `${(perDelivery[8].gross / perDelivery[2].gross).toFixed(2)}×; net of upkeep ${netRatio}`, 'goal: at most 1.25×']);
  }

  // Room broadcasts alone: the hubs' CPU per room broadcast each received (issue 55's measure).
  for (const count of BROADCAST_HUB_COUNTS) {
    const hubs = await Promise.all(Array.from({ length: count }, spawnHub));
    await sleep(1000);
    const run = await measure(hubs, shuffled, (i) => i % count, 0, BROADCASTS_PER_SECOND);
    const gross = (1000 * sum(run.cpu)) / run.broadcastsReceived;
    const net = run.netInAll === null ? null : (1000 * run.netInAll) / run.broadcastsReceived;
    rows.push([
      `room broadcasts alone, ${count} hub nodes, ${BROADCASTS_PER_SECOND} posts/s`,
      `${run.posts} posts reached ${run.broadcastsReceived} hubs (${(run.broadcastsReceived / run.posts).toFixed(2)} a post); ${run.delivered} of ${run.expected} deliveries`,
      `hub CPU per room broadcast received: ${gross.toFixed(1)} µs; net of upkeep ${net === null ? 'not measurable (the upkeep is half the CPU or more)' : `${net.toFixed(1)} µs`} (goal: at most 40 µs net)`,
    ]);
    log(rows.at(-1).join(' | '));
    await Promise.all(hubs.map(stopHub));
  }

  // One hub holds every socket, two hold none: what the two spend on traffic that is not theirs.
  const hubs = await Promise.all(Array.from({ length: 3 }, spawnHub));
  await sleep(1000);
  const run = await measure(hubs, shuffled, () => 0);
  const [busy, ...idle] = run.cpu;
  const [busyNet, ...idleNet] = run.net;
  rows.push([
    '3 hub nodes, every socket on one',
    `${run.delivered} of ${run.expected} deliveries; hub CPU ${run.cpu.map((ms) => `${(ms / 1000).toFixed(2)} s`).join(', ')}`,
    `hubs holding no recipient / the busy hub: ${idle.map((ms) => `${((100 * ms) / busy).toFixed(1)}%`).join(', ')}; net of upkeep ${idleNet.map((ms) => `${((100 * ms) / busyNet).toFixed(1)}%`).join(', ')} (goal: under 5%)`,
  ]);
  await Promise.all(hubs.map(stopHub));

  console.log(`\n| bench:scale (${SOCKETS} sockets, rooms of ${ROOM_SIZE}, ${POSTS_PER_SECOND} posts/s and ${DEVICE_EVENTS_PER_SECOND} device events/s for ${SECONDS} s) | result | notes |`);
  console.log('|---|---|---|');
  for (const row of rows) console.log(`| ${row.join(' | ')} |`);
} finally {
  await stopAll(children, stack, tmp, ctx);
}
