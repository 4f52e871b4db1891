// `npm run fuzz [-- seconds]`: drives schemathesis (an independent fuzzer from PyPI) with the served
// OpenAPI document against a running api and worker, signed in as a real user, for a bounded time.
// It fails on a server error, a status or header the document does not name, or an answer that does
// not match its schema. `npm test` runs a short pass of it after the tests, on the same stack.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureMediasoupWorker } from './mediasoup-worker.mjs';
import { onRuntime } from './runtime.mjs';
import { ensureNodeModules, freePort, onShutdownSignal, stackEnv, startStack } from './stack.mjs';
import { ensureVenv } from './python-venv.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SCHEMATHESIS = '4.32.5';
const say = (message) => process.stderr.write(`[fuzz] ${message}\n`);

/** The checks that run, and those left out with why, are in scripts/schemathesis.toml (so one operation can leave one out). */

/** schemathesis's command, from its own virtual environment. */
export function ensureSchemathesis() {
  return path.join(ensureVenv('schemathesis', [`schemathesis==${SCHEMATHESIS}`]), 'bin', 'st');
}

async function waitReady(base, child, ms = 60_000) {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`the service exited with ${child.exitCode}`);
    try {
      if ((await fetch(`${base}/readyz`)).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(`the service was not ready within ${ms / 1000} s`);
}

async function post(base, url, body, token) {
  const answer = await fetch(`${base}${url}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(body),
  });
  if (!answer.ok) throw new Error(`${url} answered ${answer.status}: ${await answer.text()}`);
  return answer.status === 204 ? undefined : answer.json();
}

/** Signs a fresh user in through the SMS outbox, and gives it a room, so ids in the document lead somewhere. */
async function signIn(base, outbox) {
  const phone = `+49151${10_000_000 + Math.floor(Math.random() * 90_000_000)}`;
  await post(base, '/api/auth/code', { phone });
  const lines = readFileSync(outbox, 'utf8').trim().split('\n').map((line) => JSON.parse(line));
  const code = lines.filter((line) => line.to === phone).at(-1).code;
  const session = await post(base, '/api/auth/login', { phone, code, device: { name: 'Fuzzer', platform: 'ANDROID' } });
  await post(base, '/api/rooms', { type: 'PUBLIC_GROUP', name: 'Fuzzing ground' }, session.accessToken);
  return session.accessToken;
}

/** Runs the api and worker roles on the given stack and fuzzes them for `seconds`. Returns the exit code. */
export async function runFuzz({ stack, seconds, workDir, mediasoupWorker, seed = Date.now() % 1e6 }) {
  const st = ensureSchemathesis();
  const [port, sfuPort] = [await freePort(), await freePort()];
  const base = `http://127.0.0.1:${port}`;
  const outbox = path.join(workDir, 'fuzz-sms.jsonl');
  // With an SFU node, so room calls are served rather than answered 503.
  const service = spawn(process.execPath, ['--enable-source-maps', path.join(root, 'dist/main.js'), '--role=api,worker,sfu'], {
    cwd: root,
    stdio: ['ignore', 'ignore', 'inherit'],
    env: {
      ...process.env,
      NODE_ENV: 'development',
      CODE_HASH_MEMORY_KIB: '4096',
      LOG_LEVEL: 'warn',
      ...stackEnv(stack),
      MONGODB_URL: stack.mongoUrl.replace(/\/?$/, '/fuzz'),
      HTTP_PORT: String(port),
      SMS_OUTBOX_FILE: outbox,
      STORAGE_DIR: path.join(workDir, 'fuzz-storage'),
      MEDIASOUP_WORKER_BIN: mediasoupWorker,
      SFU_CONTROL_PORT: String(sfuPort),
    },
  });
  try {
    await waitReady(base, service);
    const token = await signIn(base, outbox);
    say(`schemathesis ${SCHEMATHESIS} against ${base} for ${seconds} s`);
    const args = ['--config-file', path.join(root, 'scripts', 'schemathesis.toml'), 'run', `${base}/v3/api-docs/api-traffic`, '--url', base, '--header', `Authorization: Bearer ${token}`];
    args.push('--max-time', String(seconds), '--workers', '1', '--seed', String(seed));
    args.push('--request-timeout', '20', '--suppress-health-check', 'all');
    // Signing out and revoking a device end the fuzzer's own session (the stateful phase finds its
    // device id in GET /api/devices); the tests cover both.
    for (const operation of ['postApiAuthLogout', 'deleteApiDevicesDeviceId']) args.push('--exclude-operation-id', operation);
    const fuzzer = spawn(st, args, { cwd: workDir, stdio: 'inherit', env: { ...process.env, SCHEMATHESIS_HOOKS: '' } });
    // schemathesis keeps to its time budget; this bounds a run that hangs anyway.
    const guard = setTimeout(() => fuzzer.kill('SIGKILL'), (seconds + 120) * 1000);
    const code = await new Promise((resolve) => fuzzer.on('exit', (exit) => resolve(exit ?? 1)));
    clearTimeout(guard);
    // The session must have lived through the run, or most operations only met 401s.
    const me = await fetch(`${base}/api/users/me`, { headers: { authorization: `Bearer ${token}` } });
    if (!me.ok) {
      say(`the fuzzer's session did not survive the run: GET /api/users/me answered ${me.status}`);
      return 1;
    }
    return code;
  } finally {
    service.kill('SIGTERM');
    await new Promise((resolve) => (service.exitCode !== null ? resolve() : service.once('exit', resolve)));
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const seconds = Number(process.argv[2] ?? 300);
  ensureNodeModules(root);
  await onRuntime(root, fileURLToPath(import.meta.url));
  const mediasoupWorker = process.env.MEDIASOUP_WORKER_BIN ?? ensureMediasoupWorker(root);
  execFileSync(process.execPath, [path.join(root, 'node_modules/typescript/bin/tsc'), '-b'], { cwd: root, stdio: 'inherit' });
  const workDir = mkdtempSync(path.join(os.tmpdir(), 'chat-fuzz-'));
  const stack = await startStack({ dataDir: workDir, persistent: false });
  const finish = async (code) => {
    await stack.stop();
    rmSync(workDir, { recursive: true, force: true });
    process.exit(code);
  };
  onShutdownSignal(() => void finish(130));
  try {
    await finish(await runFuzz({ stack, seconds, workDir, mediasoupWorker }));
  } catch (error) {
    say(String(error?.stack ?? error));
    await finish(1);
  }
}
