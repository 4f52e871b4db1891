// `npm run bench:startup`: time from `npm start` to /readyz answering 200, with the stack already
// installed and the build up to date (the first, warming run is reported apart). Each run uses free
// ports and a throw-away data folder, and stops everything it started.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../scripts/stack.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const RUNS = Number(process.env.RUNS ?? 5);

async function once() {
  const [httpPort, socketPort] = [await freePort(), await freePort()];
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'chat-bench-'));
  const started = performance.now();
  const child = spawn('npm', ['start', '--silent'], {
    cwd: root,
    detached: true,
    stdio: 'ignore',
    env: { ...process.env, HTTP_PORT: String(httpPort), SOCKET_PORT: String(socketPort), DATA_DIR: dataDir, LOG_LEVEL: 'warn' },
  });
  const exited = new Promise((resolve) => child.on('exit', resolve));
  let readyMs = null;
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    try {
      const res = await fetch(`http://127.0.0.1:${httpPort}/readyz`);
      if (res.status === 200) {
        readyMs = performance.now() - started;
        break;
      }
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  process.kill(-child.pid, 'SIGTERM');
  await exited;
  rmSync(dataDir, { recursive: true, force: true });
  if (readyMs === null) throw new Error('the service did not become ready within 60 s');
  return readyMs;
}

const warm = await once();
const times = [];
for (let i = 0; i < RUNS; i++) times.push(await once());
times.sort((a, b) => a - b);
const fmt = (ms) => `${(ms / 1000).toFixed(2)} s`;
process.stdout.write(
  [
    `npm start → /readyz 200 (stack installed, build up to date), ${RUNS} runs on ${os.cpus().length} cores`,
    `  first (warming) run: ${fmt(warm)}`,
    `  min ${fmt(times[0])}   median ${fmt(times[Math.floor(times.length / 2)])}   max ${fmt(times.at(-1))}`,
    '',
  ].join('\n'),
);
