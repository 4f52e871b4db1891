// `npm run bench:machine`: how fast this machine is right now, to read the other figures against. A
// bare Node HTTP server (its own process, on the service's runtime) answers a constant JSON body to the
// same two load-generator processes, 16 requests in flight each, that bench:messages aims at the api.
// This machine's speed drifts by the hour (README, bench/RESULTS.md); the issue 27 goals were set
// when the api's trivial route answered 20,700-26,500 requests/s here.
import { fork, spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { onRuntime } from '../scripts/runtime.mjs';
import { cpuMs } from './common.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
await onRuntime(root, process.argv[1]);
const SECONDS = Number(process.env.LOAD_SECONDS ?? 8);

const serverCode = `
const http = require('node:http');
const body = '{"status":"ok"}';
const server = http.createServer((req, res) => { res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': body.length }); res.end(body); });
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => process.stdout.write('PORT ' + server.address().port + '\\n'));
`;
const server = spawn(process.execPath, ['-e', serverCode], { stdio: ['ignore', 'pipe', 'inherit'] });
const workers = [];
try {
  const port = await new Promise((resolve, reject) => {
    server.stdout.on('data', (chunk) => {
      const found = /PORT (\d+)/.exec(String(chunk));
      if (found) resolve(Number(found[1]));
    });
    server.once('exit', (code) => reject(new Error(`the bare server exited ${code}`)));
  });
  workers.push(...[0, 1].map(() => fork(path.join(root, 'bench/http-worker.mjs'), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })));
  const server0 = cpuMs(server.pid);
  const started = performance.now();
  const results = await Promise.all(
    workers.map((worker, id) => new Promise((resolve) => {
      worker.once('message', resolve);
      worker.send({ id, cmd: 'closed', seconds: SECONDS, target: { port, concurrency: 16, method: 'GET', path: '/' } });
    })),
  );
  const seconds = (performance.now() - started) / 1000;
  const count = results.reduce((sum, result) => sum + result.times.length, 0);
  const serverCpu = (cpuMs(server.pid) - server0) / 10 / seconds;
  console.log('| measure | result |');
  console.log('|---|---|');
  console.log(`| bare Node ${process.version} HTTP server, 32 in flight | ${Math.round(count / seconds)} req/s; server CPU ${serverCpu.toFixed(0)}% |`);
} finally {
  for (const worker of workers) worker.kill();
  server.kill();
}
