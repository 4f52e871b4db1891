// `npm start`: installs what is missing, builds, starts the local stack with its data under .data/,
// and runs every role. Ctrl-C stops the service and then the stack.
//
// The SFU's worker for room calls is built from source once per machine (minutes). It no longer
// holds up the rest: where it is not built yet, the api, hub and worker roles start at once (room
// calls answer 503 SFU_UNAVAILABLE), the build runs in the background with progress lines, and an sfu
// node starts when it is done; it announces itself in Redis and room calls work without a restart.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { mediasoupWorkerPath } from './mediasoup-worker.mjs';
import { onRuntime } from './runtime.mjs';
import { cacheRoot, ensureNodeModules, onShutdownSignal, portOrFree, stackEnv, startStack, startTurn, stopChild } from './stack.mjs';
import { createWriteStream, existsSync, readFileSync } from 'node:fs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dataDir = path.resolve(process.env.DATA_DIR ?? path.join(root, '.data'));
const say = (message) => process.stderr.write(`[start] ${message}\n`);
// The secret coturn checks the service's TURN credentials with; the service is given the same one.
const turnSecret = process.env.TURN_SECRET ?? 'development-only-turn-secret';

ensureNodeModules(root);
// Node keeps what it compiled of each module on disk and starts the next time from it (Node 22+):
// the service, the chain and this script inherit it (npm start → /readyz about 0.4 s sooner here).
process.env.NODE_COMPILE_CACHE ??= path.join(cacheRoot, 'node-compile-cache');
await onRuntime(root, fileURLToPath(import.meta.url));
const given = process.env.MEDIASOUP_WORKER_BIN;
const cached = mediasoupWorkerPath(root);
const workerReady = given ?? (cached && existsSync(cached) ? cached : undefined);

const build = spawn(process.execPath, [path.join(root, 'node_modules/typescript/bin/tsc'), '-b'], { cwd: root, stdio: 'inherit' });
const built = new Promise((resolve) => build.on('exit', (code) => resolve(code === 0)));
// The development chain on Hardhat's usual port when it is free, so wallet apps and scripts find it.
const stack = await startStack({ dataDir, persistent: true, chainPort: 8545 });
if (!process.env.EVM_RPC_URL) await startLedgerAfresh(stack);
// TURN for calls: coturn on the port the service hands out (3478 when free), checking the credentials
// the service issues with the same secret. TURN_URLS set: that TURN server is used, none is started.
const turn = process.env.TURN_URLS ? null : await startTurn({ port: await portOrFree(3478), secret: turnSecret });
if (turn) say(`TURN and STUN on 127.0.0.1:${turn.port} (coturn; udp and tcp)`);

const children = new Set();
let stopping = false;
async function shutdown(code) {
  if (stopping) return;
  stopping = true;
  await Promise.all(
    [...children].map((child) => {
      if (child.exitCode !== null || child.signalCode !== null) return undefined;
      child.kill('SIGTERM');
      return new Promise((resolve) => child.once('exit', resolve));
    }),
  );
  if (turn) await stopChild(turn.child);
  await stack.stop();
  process.exit(code);
}
onShutdownSignal(() => void shutdown(0));

if (!(await built)) {
  say('build failed');
  await shutdown(1);
}

const env = {
  ...process.env,
  ...stackEnv(stack),
  ...(turn ? { TURN_URLS: turn.turnUrls, STUN_URLS: turn.stunUrls, TURN_SECRET: turnSecret } : {}),
  SMS_OUTBOX_FILE: process.env.SMS_OUTBOX_FILE ?? path.join(dataDir, 'sms-outbox.jsonl'),
  // Development: apps' webhooks may be on this machine (`npm run example:pizza`); production refuses them.
  WEBHOOK_ALLOW_PRIVATE: process.env.WEBHOOK_ALLOW_PRIVATE ?? 'true',
};
function run(role, extraEnv = {}) {
  const child = spawn(process.execPath, ['--enable-source-maps', path.join(root, 'dist/main.js'), `--role=${role}`], {
    cwd: root,
    stdio: 'inherit',
    env: { ...env, ...extraEnv },
  });
  children.add(child);
  child.on('exit', (code) => {
    children.delete(child);
    if (!stopping) void shutdown(code ?? 1);
  });
  return child;
}

if (workerReady) {
  run('all', { MEDIASOUP_WORKER_BIN: workerReady });
} else if (!cached) {
  say('mediasoup is not installed: room calls are off (503 SFU_UNAVAILABLE)');
  run('api,realtime,worker');
} else {
  run('api,realtime,worker');
  buildSfuWorkerInBackground();
}

/** Builds the SFU worker in a child process, says how it goes, and starts an sfu node when it is ready. */
function buildSfuWorkerInBackground() {
  say('room calls answer 503 SFU_UNAVAILABLE until the SFU worker is built: building it in the background (a few minutes, once per machine)');
  const started = Date.now();
  const builder = spawn(process.execPath, [path.join(root, 'scripts/mediasoup-worker.mjs')], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(builder);
  // Everything the build prints goes to a log file; on failure the lines that name an error are
  // printed whole (a compiler's error can be far from the end of ninja's output).
  const logFile = path.join(dataDir, 'sfu-build.log');
  const buildLog = createWriteStream(logFile);
  let output = '';
  builder.stdout.on('data', (chunk) => (output += chunk));
  builder.stderr.pipe(buildLog);
  const progress = setInterval(() => say(`SFU worker still building (${Math.round((Date.now() - started) / 1000)} s)`), 30_000);
  progress.unref();
  builder.on('exit', (code) => {
    clearInterval(progress);
    children.delete(builder);
    if (stopping) return;
    const binary = output.trim().split('\n').at(-1);
    if (code !== 0 || !binary) {
      buildLog.end(() => say(`the SFU worker could not be built; room calls stay off until the next start tries again. The errors (all of it in ${logFile}):\n${buildErrors(readFileSync(logFile, 'utf8'))}`));
      return;
    }
    say(`SFU worker built in ${Math.round((Date.now() - started) / 1000)} s: starting the sfu role; room calls are on`);
    run('sfu', { MEDIASOUP_WORKER_BIN: binary });
  });
}

/** The lines of a build's output that say what failed (compiler errors, ninja's FAILED, a thrown error), or its end. */
function buildErrors(text) {
  const lines = text.split('\n');
  const errors = lines.filter((line) => /\b(error|FAILED|Error:|fatal)\b/.test(line));
  return (errors.length > 0 ? errors.slice(0, 40) : lines.slice(-40)).join('\n');
}

/**
 * Each `npm start` begins a new development chain (Hardhat keeps its state in memory), while the
 * database under .data/ stays: the wallets' ledger would claim money the new chain never had, and the
 * books check would report it. So with a new chain the development ledger starts afresh too: wallets,
 * their history, withdrawals, swaps, payment requests and apps' payments are removed (accounts,
 * rooms and messages stay). Said at start; docs/clients/wallets.md.
 */
async function startLedgerAfresh(stack) {
  const { MongoClient } = await import('mongodb');
  const client = new MongoClient(stack.mongoUrl);
  try {
    const db = client.db(process.env.MONGODB_DB ?? 'chat');
    const names = (await db.listCollections({}, { nameOnly: true }).toArray()).map((c) => c.name);
    const ledger = names.filter((name) => /^(ledger_|wallet_|chain_cursors$|app_payments$|app_money_requests$)/.test(name));
    for (const name of ledger) await db.collection(name).drop();
    if (ledger.length > 0) say(`a new development chain: the development ledger starts afresh (${ledger.length} wallet collections cleared)`);
  } finally {
    await client.close();
  }
}
