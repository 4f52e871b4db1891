// `npm run bench:webhooks`: signed webhook deliveries through the queue to local healthy apps. One
// worker process sends; this process enqueues (the delivery record and the BullMQ job, as the service
// does) and runs the apps' HTTP servers, noting when each call arrives. Phase 1: BURST deliveries at
// once, spread over APPS apps (each app takes at most 8 calls at a time): deliveries per second from
// the first enqueue to the last arrival. Phase 2: RATE deliveries per second for SECONDS seconds:
// p50/p99 from enqueue to arrival.
import http from 'node:http';
import { cpuMs, percentile, spawnRole, stopAll, startBench } from './common.mjs';

const APPS = Number(process.env.APPS ?? 8);
const BURST = Number(process.env.BURST ?? 5000);
const RATE = Number(process.env.RATE ?? 500);
const SECONDS = Number(process.env.SECONDS ?? 10);

const { tmp, stack, env, ctx, children } = await startBench('hooks', { WEBHOOK_ALLOW_PRIVATE: 'true' });

/** Arrival times by delivery id, and a waiter for a count of arrivals. */
const arrived = new Map();
let wake = null;
const server = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    arrived.set(req.headers['x-service-delivery'], performance.now());
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"type":"ack","message":"ok"}');
    if (wake && arrived.size >= wake.count) wake.resolve();
  });
});
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const url = `http://127.0.0.1:${server.address().port}/webhook`;
// Every phase has a deadline: what did not arrive by then is counted and named, not waited for forever.
const DEADLINE_MS = Number(process.env.DEADLINE_MS ?? 120_000);
const arrivals = (count) =>
  arrived.size >= count
    ? Promise.resolve()
    : new Promise((resolve) => {
        const timer = setTimeout(resolve, DEADLINE_MS);
        wake = { count, resolve: () => (clearTimeout(timer), resolve()) };
      });
/** The deliveries of a phase that never reached the app, with their stored status and failure. */
async function missing(sent) {
  const lost = [...sent.keys()].filter((deliveryId) => !arrived.has(deliveryId));
  if (lost.length === 0) return '';
  const docs = await ctx.platform.db.collection('app_deliveries').find({ _id: { $in: lost.slice(0, 20) } }).toArray();
  const activity = await ctx.platform.db.collection('app_activity').find({ deliveryId: { $in: lost.slice(0, 20) } }).toArray();
  const failures = activity.map((row) => row.failure).filter(Boolean);
  return `; ${lost.length} did not arrive within ${DEADLINE_MS / 1000} s (first ${docs.length}: ${[...new Set(docs.map((doc) => doc.status))].join(', ')}; failures ${failures.join(', ') || 'none recorded'})`;
}

try {
  const owner = { userId: 'bench-owner', deviceId: 'bench-device' };
  const apps = [];
  for (let i = 0; i < APPS; i++) apps.push((await ctx.services.apps.create(owner, { name: `Bench ${i}`, webhookUrl: url })).id);
  const worker = await spawnRole('worker', env, children);
  const webhooks = ctx.services.appWebhooks;
  const sentAt = new Map();
  const enqueue = async (i) => {
    const started = performance.now();
    const deliveryId = await webhooks.enqueue(apps[i % apps.length], 'invocation', { type: 'invocation', id: `b-${i}`, ts: Math.floor(Date.now() / 1000), command: 'bench', values: { n: i } }, { retry: false });
    sentAt.set(deliveryId, started);
  };
  // Warm-up.
  for (let i = 0; i < 50; i++) await enqueue(i);
  await arrivals(50);

  arrived.clear();
  sentAt.clear();
  const burstStarted = performance.now();
  const burstCpu0 = cpuMs(worker.pid);
  for (let start = 0; start < BURST; start += 200) await Promise.all(Array.from({ length: Math.min(200, BURST - start) }, (_, k) => enqueue(start + k)));
  await arrivals(BURST);
  const burstSeconds = (performance.now() - burstStarted) / 1000;
  const burstCpuSeconds = (cpuMs(worker.pid) - burstCpu0) / 1000;
  const burstArrived = arrived.size;
  const burstMissing = await missing(sentAt);

  arrived.clear();
  sentAt.clear();
  const total = RATE * SECONDS;
  const paceStarted = performance.now();
  const pending = [];
  for (let i = 0; i < total; i++) {
    const due = paceStarted + (i * 1000) / RATE;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((resolve) => setTimeout(resolve, wait));
    pending.push(enqueue(i));
  }
  await Promise.all(pending);
  await arrivals(total);
  const latencies = [...sentAt].filter(([deliveryId]) => arrived.has(deliveryId)).map(([deliveryId, at]) => arrived.get(deliveryId) - at).sort((a, b) => a - b);
  const paceMissing = await missing(sentAt);
  // A delivery is DELIVERED a moment after its call arrives (the answer, the activity row, the end):
  // the count waits for the last ends to be written, up to the deadline, instead of racing them.
  const notDelivered = async () => (await ctx.repos.apps.countDeliveries()) - (await ctx.repos.apps.countDeliveries('DELIVERED'));
  const settleBy = performance.now() + DEADLINE_MS;
  let failed = await notDelivered();
  while (failed > 0 && performance.now() < settleBy && (await ctx.repos.apps.countDeliveries('PENDING')) > 0) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    failed = await notDelivered();
  }

  console.log(`signed webhook deliveries through the queue, one worker process, ${APPS} local apps (8 calls at a time each), mongo-java-server (memory):`);
  console.log(`  burst of ${BURST}: ${(burstArrived / burstSeconds).toFixed(0)} deliveries/s (${burstSeconds.toFixed(2)} s from the first enqueue to the last arrival)${burstMissing}`);
  console.log(`  capacity figure: ${(burstArrived / burstCpuSeconds).toFixed(0)} webhook deliveries per worker CPU-second (worker CPU ${burstCpuSeconds.toFixed(2)} s for the burst)`);
  console.log(`  ${RATE}/s for ${SECONDS} s: enqueue to arrival p50 ${percentile(latencies, 50).toFixed(1)} ms, p99 ${percentile(latencies, 99).toFixed(1)} ms; ${failed} not delivered${paceMissing}`);
} finally {
  server.closeAllConnections();
  server.close();
  await stopAll(children, stack, tmp, ctx);
}
