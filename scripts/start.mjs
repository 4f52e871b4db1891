// `npm start`: installs what is missing, builds, starts the local stack with its data under .data/,
// and runs every role in one process. Ctrl-C stops the service and then the stack.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureMediasoupWorker } from './mediasoup-worker.mjs';
import { ensureNodeModules, onShutdownSignal, startStack } from './stack.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dataDir = path.resolve(process.env.DATA_DIR ?? path.join(root, '.data'));

ensureNodeModules(root);
// The SFU's worker for room calls: built from source once per machine (a few minutes the first time).
// Where it cannot be built, the service runs without room calls (they answer 503 SFU_UNAVAILABLE).
let mediasoupWorker = process.env.MEDIASOUP_WORKER_BIN;
if (!mediasoupWorker) {
  try {
    mediasoupWorker = ensureMediasoupWorker(root);
  } catch (error) {
    process.stderr.write(`[start] no SFU worker, room calls are off: ${error instanceof Error ? error.message : String(error)}\n`);
  }
}
const build = spawn(process.execPath, [path.join(root, 'node_modules/typescript/bin/tsc'), '-b'], { cwd: root, stdio: 'inherit' });
const built = new Promise((resolve) => build.on('exit', (code) => resolve(code === 0)));
const stack = await startStack({ dataDir, persistent: true });

let app = null;
let stopping = false;
async function shutdown(code) {
  if (stopping) return;
  stopping = true;
  if (app && app.exitCode === null) {
    app.kill('SIGTERM');
    await new Promise((resolve) => app.once('exit', resolve));
  }
  await stack.stop();
  process.exit(code);
}
onShutdownSignal(() => void shutdown(0));

if (!(await built)) {
  process.stderr.write('build failed\n');
  await shutdown(1);
}
app = spawn(process.execPath, ['--enable-source-maps', path.join(root, 'dist/main.js'), '--role=all'], {
  cwd: root,
  stdio: 'inherit',
  env: {
    ...process.env,
    MONGODB_URL: stack.mongoUrl,
    REDIS_URL: stack.redisUrl,
    ...(mediasoupWorker ? { MEDIASOUP_WORKER_BIN: mediasoupWorker } : {}),
    SMS_OUTBOX_FILE: process.env.SMS_OUTBOX_FILE ?? path.join(dataDir, 'sms-outbox.jsonl'),
  },
});
app.on('exit', (code) => void shutdown(code ?? 1));
