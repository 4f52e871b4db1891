// `npm test`: installs what is missing, lints, type-checks and builds, starts a throw-away stack
// (in memory, temporary folder), runs every test file against it, and stops the stack whatever happens.
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureMediasoupWorker } from './mediasoup-worker.mjs';
import { onRuntime } from './runtime.mjs';
import { PYTHON_CLIENT_REQUIREMENTS, SOCKET_CLIENT_REQUIREMENTS, ensureVenv } from './python-venv.mjs';
import { aptInstall, ensureNodeModules, has, onShutdownSignal, stackEnv, startRedisCluster, startStack, stopChild } from './stack.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const filter = process.argv.slice(2);

let current = null;
function run(command, args, env = process.env) {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd: root, stdio: 'inherit', env });
    current = child;
    child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
}

function testFiles(dir) {
  const found = [];
  for (const entry of readdirSync(dir)) {
    const full = path.join(dir, entry);
    if (statSync(full).isDirectory()) found.push(...testFiles(full));
    else if (entry.endsWith('.test.js')) found.push(full);
  }
  return found.sort();
}

ensureNodeModules(root);
// Everything below runs on the project's Node 24 (scripts/runtime.mjs), whatever Node started npm.
await onRuntime(root, fileURLToPath(import.meta.url));
process.stderr.write(`[test] node ${process.version} (${process.execPath})\n`);
// Room-call tests drive a real mediasoup SFU: its worker is built from source once per machine.
const mediasoupWorker = process.env.MEDIASOUP_WORKER_BIN ?? ensureMediasoupWorker(root);
if (!mediasoupWorker) {
  process.stderr.write('[test] mediasoup is not installed (npm ci installs it): the room-call tests need it\n');
  process.exit(1);
}
// The generated-client test writes a Python client with openapi-python-client and runs it.
const pythonClientVenv = ensureVenv('openapi-python-client', PYTHON_CLIENT_REQUIREMENTS);
// The socket test drives the hub with python-socketio.
const pythonSocketVenv = ensureVenv('python-socketio', SOCKET_CLIENT_REQUIREMENTS);
// The console's browser tests drive Debian's chromium through Playwright (which downloads no browser here).
if (!has('chromium')) aptInstall(['chromium']);
const bin = (name) => path.join(root, 'node_modules', '.bin', name);
for (const [what, command, args] of [
  ['lint', bin('eslint'), ['--max-warnings', '0', '.']],
  ['lint: import cycles', process.execPath, [path.join(root, 'scripts', 'import-cycles.mjs')]],
  ['type-check and build', bin('tsc'), ['-b']],
  // The client library builds on its own (browser and React Native: no Node types); its tests pack it.
  ['type-check: the client library', bin('tsc'), ['-p', path.join(root, 'packages', 'client', 'tsconfig.json'), '--noEmit']],
]) {
  process.stderr.write(`[test] ${what}\n`);
  const code = await run(command, args);
  if (code !== 0) {
    process.stderr.write(`[test] ${what} failed\n`);
    process.exit(code);
  }
}

const tmp = mkdtempSync(path.join(os.tmpdir(), 'chat-test-'));
const stack = await startStack({ dataDir: tmp, persistent: false, forTests: true });
let finished = false;
async function finish(code) {
  if (finished) return;
  finished = true;
  if (current && current.exitCode === null) current.kill('SIGKILL');
  await stack.stop();
  rmSync(tmp, { recursive: true, force: true });
  process.exit(code);
}
onShutdownSignal(() => void finish(130));

const files = testFiles(path.join(root, 'dist', 'test')).filter((file) => filter.length === 0 || filter.some((f) => file.includes(f)));
// A test file whose process never exits (an open handle) would hang CI: the whole run is bounded.
const WATCHDOG_MS = Number(process.env.TEST_WATCHDOG_MS ?? 20 * 60 * 1000);
const watchdog = setTimeout(() => {
  process.stderr.write(`[test] no end after ${WATCHDOG_MS / 1000} s: stopping\n`);
  void finish(1);
}, WATCHDOG_MS);
const nodeTest = (testFiles) => ['--enable-source-maps', '--test', '--test-concurrency=2', '--test-timeout=180000', '--test-reporter=spec', ...testFiles];
const testEnv = { ...process.env, NODE_ENV: 'test', ...stackEnv(stack), TEST_TMP: tmp, MEDIASOUP_WORKER_BIN: mediasoupWorker, PYTHON_CLIENT_VENV: pythonClientVenv, PYTHON_SOCKET_VENV: pythonSocketVenv };
let code = files.length === 0 ? 0 : await run(process.execPath, nodeTest(files), testEnv);
// The suites of the hubs, the queues and the topology again, on a Redis Cluster of three masters with
// a replica each (docs/operators/scaling.md, "Redis by role"): after a green pass of the whole run, or
// when only they were asked for with `npm test -- on-cluster`.
const CLUSTER_SUITES = ['realtime.test.js', 'queues.test.js', 'topology.test.js'];
if (code === 0 && (filter.length === 0 || filter.includes('on-cluster'))) {
  const onCluster = testFiles(path.join(root, 'dist', 'test')).filter((file) => CLUSTER_SUITES.includes(path.basename(file)));
  process.stderr.write(`[test] ${onCluster.map((file) => path.basename(file)).join(', ')} on a Redis Cluster\n`);
  const cluster = await startRedisCluster({ dir: path.join(tmp, 'redis-cluster') });
  code = await run(process.execPath, nodeTest(onCluster), { ...testEnv, REDIS_URL: cluster.url });
  await Promise.all(cluster.nodes.map((node) => stopChild(node.child, 'SIGKILL')));
}
clearTimeout(watchdog);
// A short pass of the fuzzer against the same stack (`npm run fuzz` runs a longer one, with a new seed
// each time, to explore). Here the seed is fixed (FUZZ_SEED changes it), so a run is repeatable and
// what a new seed finds is fixed before it lands, not found by chance in CI. Skipped when only some
// tests were asked for, or with FUZZ_SECONDS=0.
const fuzzSeconds = Number(process.env.FUZZ_SECONDS ?? 60);
if (code === 0 && filter.length === 0 && fuzzSeconds > 0) {
  process.stderr.write(`[test] fuzzing the OpenAPI document for ${fuzzSeconds} s\n`);
  const { runFuzz } = await import('./fuzz.mjs');
  const fuzzed = await runFuzz({ stack, seconds: fuzzSeconds, workDir: tmp, mediasoupWorker, seed: Number(process.env.FUZZ_SEED ?? 20261123) }).catch((error) => {
    process.stderr.write(`[test] the fuzz run failed to start: ${error?.stack ?? error}\n`);
    return 1;
  });
  await finish(fuzzed);
}
await finish(code);
