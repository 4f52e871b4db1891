import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { SHARD_KEYS } from '../../src/platform/shard-keys.js';
import { english, generateMnemonic } from 'viem/accounts';
import { parse } from 'yaml';
import { loadConfig, productionRequirements } from '../../src/platform/config.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { freePort } from '../helpers/ports.js';
import { loggedPort, opsReady, spawnRole, type RoleProcess } from '../helpers/processes.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const mainJs = path.join(root, 'dist', 'main.js');

interface ComposeService {
  build?: string;
  image?: string;
  command?: string[];
  environment?: Record<string, string>;
}
const compose = parse(readFileSync(path.join(root, 'docker-compose.yml'), 'utf8'), { merge: true }) as { services: Record<string, ComposeService> };
const appServices = Object.entries(compose.services).filter(([, service]) => service.image === 'chat-platform:latest');
const roleOf = (service: ComposeService) => service.command?.find((arg) => arg.startsWith('--role='))?.slice('--role='.length);

/** Fills the compose file's `${VAR:?…}`, `${VAR:-default}` and `${VAR}` from `values` (a missing required one fails the test). */
function interpolate(environment: Record<string, string>, values: Record<string, string>): Record<string, string> {
  const fill = (text: string) =>
    text.replace(/\$\{(\w+)(?::([?-])([^}]*))?\}/g, (_all, name: string, kind?: string, rest?: string) => {
      if (values[name] !== undefined) return values[name];
      if (kind === '?') throw new Error(`the test has no value for ${name}`);
      return kind === '-' ? (rest ?? '') : '';
    });
  return Object.fromEntries(Object.entries(environment).map(([key, value]) => [key, fill(String(value))]));
}

describe('production configuration and docker-compose.yml', () => {
  it('every app service of the compose file sets every variable production requires', () => {
    const required = productionRequirements();
    assert.ok(required.includes('JWT_SECRET') && required.includes('PRICE_SOURCE') && required.includes('PUSH_PROVIDER'), required.join(', '));
    assert.deepEqual(appServices.map(([, service]) => roleOf(service)).sort(), ['api', 'api', 'realtime', 'realtime', 'sfu', 'worker']);
    for (const [name, service] of appServices) {
      const missing = required.filter((key) => !(key in (service.environment ?? {})));
      assert.deepEqual(missing, [], `${name} lacks ${missing.join(', ')}`);
      assert.equal(service.environment?.STORAGE_PROVIDER, 's3', `${name}: uploads must be shared by api and worker`);
      assert.equal(service.environment?.OPS_PORT, '9090');
    }
    // The front, the shared uploads store, the replica set, Redis with its append-only file, TURN.
    assert.ok(compose.services.nginx && compose.services.minio && compose.services.coturn);
    assert.match(compose.services.mongo!.command!.join(' '), /--replSet/);
    assert.match(compose.services.redis!.command!.join(' '), /--appendonly yes/);
  });

  it('docker-compose.redis-cluster.yml puts every app node on a Redis Cluster of three masters with a replica each, by role', () => {
    const text = readFileSync(path.join(root, 'docker-compose.redis-cluster.yml'), 'utf8');
    // `!override` is Compose's tag (the app nodes' depends_on replaced, not merged): a plain map here.
    const cluster = parse(text, { merge: true, customTags: [{ tag: '!override', resolve: (value: unknown) => value, collection: 'map' }] }) as { services: Record<string, ComposeService & { profiles?: string[]; depends_on?: Record<string, unknown> }> };
    assert.deepEqual(cluster.services.redis?.profiles, ['single-redis'], 'the single Redis is left out');
    const nodes = Object.keys(cluster.services).filter((name) => /^redis-\d$/.test(name));
    assert.equal(nodes.length, 6);
    for (const node of nodes) assert.match(cluster.services[node]!.command!.join(' '), /--cluster-enabled yes .*--appendonly yes/);
    assert.match(String(cluster.services['redis-cluster-init']!.command), /--cluster create( redis-\d:6379){6} --cluster-replicas 1/);
    for (const [name] of appServices) {
      const service = cluster.services[name];
      assert.ok(service?.environment && service.depends_on?.['redis-cluster-init'], `${name} is not moved to the cluster`);
      assert.equal(service.depends_on?.redis, undefined, `${name} still waits for the single Redis`);
      const config = loadConfig({ ...service.environment });
      for (const key of ['REDIS_URL', 'REDIS_QUEUES_URL', 'REDIS_PUBSUB_URL'] as const) assert.match(String(config[key]), /^redis-cluster:\/\/redis-1:6379,/);
    }
  });

  it('docker-compose.mongo-sharded.yml puts every app node on mongos over a config server replica set and two shards, and shards what shard-keys.ts says', () => {
    const text = readFileSync(path.join(root, 'docker-compose.mongo-sharded.yml'), 'utf8');
    const sharded = parse(text, { merge: true, customTags: [{ tag: '!override', resolve: (value: unknown) => value, collection: 'map' }] }) as { services: Record<string, ComposeService & { profiles?: string[]; depends_on?: Record<string, unknown>; volumes?: string[] }> };
    assert.deepEqual(sharded.services.mongo?.profiles, ['single-mongo'], 'the single replica set is left out');
    assert.match(sharded.services['mongo-config']!.command!.join(' '), /--configsvr --replSet cfgrs/);
    for (const shard of ['mongo-shard-1', 'mongo-shard-2']) assert.match(sharded.services[shard]!.command!.join(' '), /--shardsvr --replSet shard\drs/);
    assert.match(sharded.services.mongos!.command!.join(' '), /^mongos --configdb cfgrs\/mongo-config:27018/);
    const init = sharded.services['mongo-shard-init']!;
    assert.ok(init.volumes?.some((volume) => volume.startsWith('./deploy/mongo-shard-init.js:')), 'the init script is mounted');
    // The script shards exactly the collections that have a shard key, each by it.
    const script = readFileSync(path.join(root, 'deploy/mongo-shard-init.js'), 'utf8');
    const lines = [...script.matchAll(/^shard\('([a-z0-9_]+)', (\{.*\})\);$/gm)].map((match) => [match[1]!, JSON.parse(match[2]!.replaceAll("'", '"'))]);
    assert.deepEqual(lines, Object.entries(SHARD_KEYS).flatMap(([name, plan]) => ('key' in plan ? [[name, plan.key]] : [])));
    for (const [name] of appServices) {
      const service = sharded.services[name];
      assert.ok(service?.environment && service.depends_on?.['mongo-shard-init'], `${name} is not moved to mongos`);
      assert.equal(service.depends_on?.mongo, undefined, `${name} still waits for the single replica set`);
      assert.equal(loadConfig({ ...service.environment }).MONGODB_URL, 'mongodb://mongos:27017/');
    }
  });

  it('a start with nothing set names every missing variable at once, and refuses the static price feed and a remote push provider without keys', () => {
    const child = spawn(process.execPath, [mainJs, '--role=api'], { env: { PATH: process.env.PATH ?? '', NODE_ENV: 'production' }, stdio: ['ignore', 'pipe', 'pipe'] });
    return new Promise<void>((resolve, reject) => {
      let output = '';
      child.stderr.on('data', (chunk) => (output += chunk));
      child.once('exit', (code) => {
        try {
          assert.equal(code, 2, output);
          for (const key of productionRequirements()) assert.match(output, new RegExp(`^  ${key}: `, 'm'), `${key} is not named`);
          resolve();
        } catch (error) {
          reject(error as Error);
        }
      });
    });
  });

  it('the static price feed runs in production only when set by hand; long-polling only when enabled', () => {
    const key = Buffer.alloc(32, 7).toString('base64');
    const base = {
      NODE_ENV: 'production', JWT_SECRET: 'x'.repeat(40), TURN_SECRET: 't'.repeat(20), SFU_SECRET: 's'.repeat(20), HOT_WALLET_PRIVATE_KEY: `0x${'1'.repeat(64)}`,
      DEPOSIT_MNEMONIC: generateMnemonic(english), USDT_TOKEN_ADDRESS: `0x${'2'.repeat(40)}`, APPS_SECRET_KEY: key, APPS_SIGNING_KEY: key, EMAIL_PROVIDER: 'outbox', SMS_PROVIDER: 'outbox', PUSH_PROVIDER: 'local', SMS_ALLOWED_COUNTRIES: 'DE',
      ALLOW_OUTBOX_PROVIDERS: 'true',
    };
    // The outbox files only when allowed in so many words.
    assert.throws(() => loadConfig({ ...base, PRICE_SOURCE: 'coingecko', ALLOW_OUTBOX_PROVIDERS: '' }), /SMS_PROVIDER: outbox writes to a file in production[\s\S]*EMAIL_PROVIDER: outbox/);
    assert.doesNotThrow(() => loadConfig({ ...base, PRICE_SOURCE: 'coingecko' }));
    assert.throws(() => loadConfig(base), /PRICE_SOURCE: is required in production/);
    assert.equal(loadConfig({ ...base, PRICE_SOURCE: 'static' }).staticPricesInProduction, true);
    assert.equal(loadConfig({ ...base, PRICE_SOURCE: 'coingecko' }).staticPricesInProduction, false);
    assert.equal(loadConfig({}).PRICE_SOURCE, 'static');
    assert.throws(() => loadConfig({ ...base, PRICE_SOURCE: 'coingecko', PUSH_PROVIDER: 'remote' }), /PUSH_PROVIDER: remote needs APNs/);
    assert.deepEqual(loadConfig({}).SOCKET_TRANSPORTS, ['websocket']);
    assert.deepEqual(loadConfig({ SOCKET_TRANSPORTS: 'websocket,polling' }).SOCKET_TRANSPORTS, ['websocket', 'polling']);
    assert.equal(loadConfig({}).OPS_PORT, undefined);
  });
});

describe('every role boots with the production configuration of the compose file', () => {
  let t: TestApp;
  let s3: { close(): Promise<void> };
  let values: Record<string, string>;
  const nodes: RoleProcess[] = [];

  before(async () => {
    t = await startTestApp();
    const S3rver = createRequire(import.meta.url)('s3rver') as new (options: Record<string, unknown>) => { run(): Promise<unknown>; close(): Promise<void> };
    const s3Port = await freePort();
    const server = new S3rver({ port: s3Port, address: '127.0.0.1', silent: true, directory: await mkdtemp(path.join(os.tmpdir(), 's3rver-')), configureBuckets: [{ name: 'chat-uploads' }] });
    await server.run();
    s3 = server;
    // A real FCM service account file (its own RSA key): the remote push provider reads it on first use.
    const dir = await mkdtemp(path.join(process.env.TEST_TMP ?? os.tmpdir(), 'prod-'));
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const fcmFile = path.join(dir, 'fcm.json');
    await writeFile(fcmFile, JSON.stringify({ type: 'service_account', project_id: 'chat-test', client_email: 'push@chat-test.iam.gserviceaccount.com', private_key: privateKey.export({ type: 'pkcs8', format: 'pem' }), token_uri: 'http://127.0.0.1:1/token' }));
    const secret = () => randomBytes(32).toString('base64');
    values = {
      PUBLIC_BASE_URL: 'https://chat.example.test',
      MEDIA_BASE_URL: 'https://media.example.test',
      JWT_SECRET: randomBytes(32).toString('hex'),
      TWILIO_ACCOUNT_SID: `AC${randomBytes(16).toString('hex')}`,
      TWILIO_AUTH_TOKEN: randomBytes(16).toString('hex'),
      TWILIO_FROM: '+14155550100',
      SMS_ALLOWED_COUNTRIES: 'DE,AT,US',
      EMAIL_FROM: 'no-reply@chat.example.test',
      SENDGRID_API_KEY: `SG.${randomBytes(16).toString('hex')}`,
      MINIO_ROOT_USER: 'S3RVER',
      MINIO_ROOT_PASSWORD: 'S3RVER',
      PUSH_PROVIDER: 'remote',
      FCM_SERVICE_ACCOUNT_FILE: fcmFile,
      TURN_SECRET: randomBytes(16).toString('hex'),
      TURN_HOST: '127.0.0.1',
      SFU_SECRET: randomBytes(16).toString('hex'),
      APPS_SECRET_KEY: secret(),
      APPS_SIGNING_KEY: secret(),
      EVM_RPC_URL: t.config.EVM_RPC_URL,
      USDT_TOKEN_ADDRESS: t.config.USDT_TOKEN_ADDRESS!,
      HOT_WALLET_PRIVATE_KEY: `0x${randomBytes(32).toString('hex')}`,
      DEPOSIT_MNEMONIC: generateMnemonic(english),
      PUBLIC_IP: '127.0.0.1',
    };
    // The compose file's service addresses and ports, pointed at this test's stack.
    values.__s3 = `http://127.0.0.1:${s3Port}`;
  });
  after(async () => {
    await Promise.all(nodes.map((node) => node.kill('SIGKILL')));
    await s3.close();
    await t.close();
  });

  for (const role of ['api', 'realtime', 'worker', 'sfu']) {
    it(`${role}: ready on its operations port with its metrics, with NODE_ENV=production`, async () => {
      const service = appServices.find(([, s]) => roleOf(s) === role)![1];
      const publicPort = await freePort();
      const env: Record<string, string> = {
        ...interpolate(service.environment!, values),
        HOST: '127.0.0.1',
        MONGODB_URL: t.config.MONGODB_URL,
        MONGODB_DB: t.config.MONGODB_DB,
        REDIS_URL: t.config.REDIS_URL,
        REDIS_PREFIX: t.config.REDIS_PREFIX,
        S3_ENDPOINT: values.__s3!,
        // No outside service is reached from a test: the price feed points at a closed local port.
        COINGECKO_BASE_URL: 'http://127.0.0.1:1',
        OPS_PORT: '0',
        HTTP_PORT: String(publicPort),
        SOCKET_PORT: String(publicPort),
        SFU_CONTROL_PORT: String(publicPort),
        SFU_RTC_MIN_PORT: '44000',
        SFU_RTC_MAX_PORT: '44099',
      };
      assert.equal(env.NODE_ENV, 'production');
      const node = await spawnRole(role, t.config, env, opsReady);
      nodes.push(node);
      const opsPort = loggedPort(node.output(), 'operations port listening');
      const readiness = (await (await fetch(`http://127.0.0.1:${opsPort}/readyz`)).json()) as { checks: Record<string, string> };
      assert.deepEqual(readiness.checks, role === 'sfu' ? { redis: 'ok' } : { mongodb: 'ok', redis: 'ok' });
      assert.deepEqual(await (await fetch(`http://127.0.0.1:${opsPort}/healthz`)).json(), { status: 'ok' });
      const metrics = await (await fetch(`http://127.0.0.1:${opsPort}/metrics`)).text();
      assert.match(metrics, /process_resident_memory_bytes/);
      // Every role: which build runs, and whether what it uses answers.
      assert.match(metrics, /build_info\{version="\d+\.\d+\.\d+",commit="[^"]+"\} 1/);
      assert.match(metrics, /dependency_up\{dependency="redis"\} 1/);
      if (role !== 'sfu') assert.match(metrics, /dependency_up\{dependency="mongodb"\} 1/);
      const own = { api: /http_request_duration_seconds/, realtime: /hub_sockets \d+/, worker: /worker_queue_depth\{queue="push"\} \d+/, sfu: /sfu_workers 1/ }[role]!;
      assert.match(metrics, own);
      if (role === 'api') {
        // The public port serves the api but not the metrics.
        assert.equal((await fetch(`http://127.0.0.1:${publicPort}/healthz`)).status, 200);
        assert.equal((await fetch(`http://127.0.0.1:${publicPort}/metrics`)).status, 404);
      }
      if (role === 'realtime') {
        // Long-polling is off unless SOCKET_TRANSPORTS enables it.
        assert.equal((await fetch(`http://127.0.0.1:${publicPort}/socket.io/?EIO=4&transport=polling`)).status, 400);
      }
    });
  }
});
