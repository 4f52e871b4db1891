// `npm run bench:startup`: time from `npm start` to /readyz answering 200, with the stack already
// installed and the build up to date (the first, warming run is reported apart). Each run uses free
// ports and a throw-away data folder, and stops everything it started.
// `BENCH_COLD=1`: one run with an empty cache folder (XDG_CACHE_HOME), as on a machine that never ran
// the service: mongo-java-server is resolved again and the SFU worker is not built (npm start builds
// it in the background); it also reports when the SFU worker was ready.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../scripts/stack.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const RUNS = Number(process.env.RUNS ?? 5);

async function once({ cacheDir, waitForSfu = false } = {}) {
  const [httpPort, socketPort, sfuPort] = [await freePort(), await freePort(), await freePort()];
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'chat-bench-'));
  const started = performance.now();
  const child = spawn('npm', ['start', '--silent'], {
    cwd: root,
    detached: true,
    stdio: ['ignore', 'ignore', 'pipe'],
    env: {
      ...process.env,
      HTTP_PORT: String(httpPort),
      SOCKET_PORT: String(socketPort),
      SFU_CONTROL_PORT: String(sfuPort),
      DATA_DIR: dataDir,
      LOG_LEVEL: 'warn',
      ...(cacheDir ? { XDG_CACHE_HOME: cacheDir } : {}),
    },
  });
  let sfuReadyMs = null;
  child.stderr.on('data', (chunk) => {
    if (sfuReadyMs === null && String(chunk).includes('room calls are on')) sfuReadyMs = performance.now() - started;
  });
  const exited = new Promise((resolve) => child.on('exit', resolve));
  let readyMs = null;
  const deadline = Date.now() + (cacheDir ? 300_000 : 60_000);
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
  if (waitForSfu) {
    const sfuDeadline = Date.now() + 900_000;
    while (sfuReadyMs === null && Date.now() < sfuDeadline) await new Promise((resolve) => setTimeout(resolve, 1000));
  }
  process.kill(-child.pid, 'SIGTERM');
  await exited;
  rmSync(dataDir, { recursive: true, force: true });
  if (readyMs === null) throw new Error('the service did not become ready in time');
  return { readyMs, sfuReadyMs };
}

const fmt = (ms) => `${(ms / 1000).toFixed(2)} s`;
if (process.env.BENCH_COLD === '1') {
  const cacheDir = mkdtempSync(path.join(os.tmpdir(), 'chat-bench-cache-'));
  try {
    const cold = await once({ cacheDir, waitForSfu: process.env.BENCH_WAIT_SFU !== '0' });
    process.stdout.write(
      [
        `npm start with an empty cache folder (no SFU worker, mongo-java-server resolved again), ${os.cpus().length} cores`,
        `  /readyz 200 after ${fmt(cold.readyMs)}`,
        `  SFU worker built and sfu role up after ${cold.sfuReadyMs === null ? 'not waited for, or not within 15 min' : fmt(cold.sfuReadyMs)}`,
        '',
      ].join('\n'),
    );
  } finally {
    rmSync(cacheDir, { recursive: true, force: true });
  }
  process.exit(0);
}

const warm = (await once()).readyMs;
const times = [];
for (let i = 0; i < RUNS; i++) times.push((await once()).readyMs);
times.sort((a, b) => a - b);
process.stdout.write(
  [
    `npm start → /readyz 200 (stack installed, build up to date), ${RUNS} runs on ${os.cpus().length} cores`,
    `  first (warming) run: ${fmt(warm)}`,
    `  min ${fmt(times[0])}   median ${fmt(times[Math.floor(times.length / 2)])}   max ${fmt(times.at(-1))}`,
    '',
  ].join('\n'),
);
