// An HTTP load-generator process for bench/messages.mjs and bench/post-cost.mjs: closed loops and
// fixed-rate open loops against one endpoint (or, fixed-rate, several in turn: `targets`), with
// keep-alive connections. Driven over IPC; answers latencies in ms.
import http from 'node:http';

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const tick = () => new Promise((resolve) => setImmediate(resolve));

function sender({ port, method, path, token, body, concurrency }) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  const payload = body ? JSON.stringify(body) : undefined;
  const headers = { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(payload ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } : {}) };
  return () =>
    new Promise((resolve) => {
      const req = http.request({ host: '127.0.0.1', port, method, path, agent, headers }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode));
      });
      req.on('error', () => resolve(599));
      req.end(payload);
    });
}

async function closed(target, seconds) {
  const send = sender(target);
  const times = [];
  let failures = 0;
  const until = Date.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: target.concurrency }, async () => {
      while (Date.now() < until) {
        const t0 = performance.now();
        if ((await send()) >= 400) failures++;
        times.push(performance.now() - t0);
      }
    }),
  );
  return { times, failures };
}

async function fixedRate(targets, perSecond, seconds) {
  const senders = targets.map(sender);
  const times = [];
  let failures = 0;
  const start = performance.now();
  const inflight = [];
  for (let i = 0; i < perSecond * seconds; i++) {
    const wait = start + (i * 1000) / perSecond - performance.now();
    // Always yield, so answers are read while requests go out.
    if (wait > 1) await sleep(wait);
    else await tick();
    const t0 = performance.now();
    inflight.push(senders[i % senders.length]().then((status) => {
      times.push(performance.now() - t0);
      if (status >= 400) failures++;
    }));
  }
  await Promise.all(inflight);
  return { times, failures, elapsed: (performance.now() - start) / 1000 };
}

process.on('message', async (m) => {
  const result = m.cmd === 'closed' ? await closed(m.target, m.seconds) : await fixedRate(m.targets ?? [m.target], m.perSecond, m.seconds);
  process.send({ id: m.id, ...result });
});
