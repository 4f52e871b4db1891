// `npm run bench:signin`: 200 concurrent code requests, then 200 concurrent logins, at one api process
// with the production argon2 cost (64 MiB, 3 passes) and the default hash bound (CODE_HASH_CONCURRENCY,
// CODE_HASH_WAIT_MS); each phone from an address of its own behind one trusted proxy hop. Prints the
// answers by status, latency percentiles and the api's peak RSS (read from /proc every 20 ms).
import http from 'node:http';
import { randomInt } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { percentile, rssKb, spawnRole, startBench, stopAll } from './common.mjs';

const CONCURRENT = Number(process.env.SIGNIN_CONCURRENT ?? 200);
const log = (message) => process.stderr.write(`[bench] ${message}\n`);

const bench = await startBench('signin', { TRUST_PROXY_HOPS: '1' });
const { tmp, stack, env, ctx, children, port } = bench;
const outbox = path.join(tmp, 'sms-outbox.jsonl');
const api = await spawnRole('api', { ...env, SMS_OUTBOX_FILE: outbox, LOG_LEVEL: 'warn' }, children);

const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENT });
function post(url, body, from) {
  return new Promise((resolve) => {
    const started = performance.now();
    const payload = Buffer.from(JSON.stringify(body));
    const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: url, agent, headers: { 'content-type': 'application/json', 'content-length': payload.length, 'x-forwarded-for': from } }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode, ms: performance.now() - started }));
    });
    req.on('error', () => resolve({ status: 0, ms: performance.now() - started }));
    req.end(payload);
  });
}

let peakKb = 0;
const sampler = setInterval(() => (peakKb = Math.max(peakKb, rssKb(api.pid))), 20);
const idleKb = rssKb(api.pid);

const phones = Array.from({ length: CONCURRENT }, (_, i) => `+4915112${String(100_000 + i).padStart(6, '0')}`);
const from = phones.map(() => `10.${randomInt(0, 256)}.${randomInt(0, 256)}.${randomInt(1, 255)}`);
const summary = (results) => {
  const byStatus = {};
  for (const { status } of results) byStatus[status] = (byStatus[status] ?? 0) + 1;
  const ms = results.map((r) => r.ms).sort((a, b) => a - b);
  return `${JSON.stringify(byStatus)}; p50 ${percentile(ms, 50).toFixed(0)} ms, p99 ${percentile(ms, 99).toFixed(0)} ms`;
};

log(`${CONCURRENT} code requests at once`);
const codes = await Promise.all(phones.map((phone, i) => post('/api/auth/code', { phone }, from[i])));
const sent = new Map(readFileSync(outbox, 'utf8').trim().split('\n').filter(Boolean).map((line) => JSON.parse(line)).map((m) => [m.to, m.code]));
log(`${CONCURRENT} logins at once (${sent.size} codes were texted)`);
const logins = await Promise.all(phones.map((phone, i) => post('/api/auth/login', { phone, code: sent.get(phone) ?? '000000', device: { name: 'Bench', platform: 'ANDROID' } }, from[i])));
clearInterval(sampler);

const rows = [
  ['code requests', summary(codes)],
  ['logins', summary(logins)],
  ['api RSS', `${(idleKb / 1024).toFixed(0)} MB idle, peak ${(peakKb / 1024).toFixed(0)} MB`],
];
process.stdout.write(`\nSign-in under load, ${CONCURRENT} at once, one api process, 2 cores, ${new Date().toISOString()}\n`);
for (const [what, figure] of rows) process.stdout.write(`| ${what} | ${figure} |\n`);
agent.destroy();
await stopAll(children, stack, tmp, ctx);
