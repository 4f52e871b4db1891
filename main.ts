import { setFlagsFromString } from 'node:v8';
import type { FastifyInstance } from 'fastify';
import { startHub, type Hub } from './realtime/hub.js';
import { loadUws, UwsUnavailableError } from './realtime/uws.js';
import { buildApp } from './rest/app.js';
import { createContext, type AppContext } from './src/composition.js';
import { ConfigError, loadConfig } from './src/platform/config.js';
import { createPlatform, type Platform } from './src/platform/platform.js';
import { createLogger } from './src/platform/logger.js';
import { createProcessMetrics, startOpsServer, type OpsServer } from './src/platform/ops-server.js';
import { dependencyGauge } from './src/platform/dependencies.js';
import { mediasoupAvailable, startSfuNode, type SfuNode } from './src/sfu/sfu-node.js';
import { startWorkers, type Workers } from './workers/main.js';

const ROLES = ['api', 'realtime', 'worker', 'sfu'] as const;
const READINESS_TIMEOUT_MS = 2_000;
type Role = (typeof ROLES)[number];
const isRole = (name: string): name is Role => ROLES.some((role) => role === name);

/** `--role=api,realtime,worker,sfu` or `--role=all` (the default). */
const roleArg = (argv: string[]) => argv.find((a) => a.startsWith('--role='))?.slice('--role='.length) ?? process.env.ROLES ?? 'all';

function parseRoles(argv: string[]): Set<Role> {
  const arg = roleArg(argv);
  const names = arg.split(',').map((name) => name.trim()).filter(Boolean);
  if (names.includes('all')) return new Set(ROLES);
  const unknown = names.filter((name) => !isRole(name));
  if (unknown.length > 0 || names.length === 0) {
    throw new ConfigError([`--role: expected all or a comma-separated list of ${ROLES.join(', ')}; got "${arg}"`]);
  }
  return new Set(names.filter(isRole));
}

async function main() {
  let config;
  let roles;
  try {
    config = loadConfig();
    roles = parseRoles(process.argv.slice(2));
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(2);
    }
    throw error;
  }
  const logger = createLogger(config, 'chat-platform');
  // A hub holds tens of thousands of idle sockets: V8's memory saver mode gives back the heap pages a
  // connection storm left committed (bench/RESULTS.md: 26 → 9 KB of RSS per idle socket on Node 24,
  // for about 20-25 ms of CPU a second per process). By default only in a hub-only process: sharing
  // one with the api and worker (npm start), it collected their request and job garbage too, more
  // often, and cost CPU on every post (bench/RESULTS.md, "What a post costs").
  // Set before the hub allocates anything.
  const hubOnly = roles.size === 1 && roles.has('realtime');
  if (roles.has('realtime') && (config.HUB_MEMORY_SAVER === 'true' || (config.HUB_MEMORY_SAVER === 'auto' && hubOnly))) setFlagsFromString('--memory-saver-mode');
  // A hub asked for uWebSockets.js whose addon cannot load refuses to start, before anything connects.
  if (roles.has('realtime') && config.SOCKET_ENGINE === 'uws') {
    try {
      await loadUws();
    } catch (error) {
      if (!(error instanceof UwsUnavailableError)) throw error;
      logger.fatal(error.message);
      process.stderr.write(`${error.message}\n`);
      process.exit(2);
    }
  }
  // Each role builds what it uses: a process that is only an sfu node needs Redis, not the database or any area.
  const needsAreas = roles.has('api') || roles.has('realtime') || roles.has('worker');
  const ctx: AppContext | null = needsAreas ? await createContext(config, logger) : null;
  const platform: Platform = ctx?.platform ?? (await createPlatform(config, logger, { database: false }));

  if (config.staticPricesInProduction) logger.warn('PRICE_SOURCE=static in production: swaps run at the fixed WALLET_STATIC_ETH_USDT price, not a market price');
  const metrics = createProcessMetrics();
  // Every role exports dependency_up for what it uses (the api's comes with its metrics).
  if (!roles.has('api')) dependencyGauge(metrics, platform.dependencies, ctx ? ['mongodb', 'redis'] : ['redis']);
  let ops: OpsServer | null = null;
  let api: FastifyInstance | null = null;
  let hub: Hub | null = null;
  let workers: Workers | null = null;
  let sfu: SfuNode | null = null;
  if (ctx && roles.has('realtime')) hub = await startHub(platform, ctx.services, { host: config.HOST, port: config.SOCKET_PORT, engine: config.SOCKET_ENGINE, metrics });
  if (ctx && roles.has('worker')) workers = await startWorkers(platform, ctx.services, metrics);
  // Room calls need mediasoup's worker binary. Asked for by name, the sfu role must start; as part
  // of `all` it is left out (room calls answer 503 SFU_UNAVAILABLE) where the binary is missing.
  if (roles.has('sfu')) {
    if (await mediasoupAvailable(config)) sfu = await startSfuNode(platform, { metrics });
    else if (!roleArg(process.argv.slice(2)).includes('all')) throw new Error('the sfu role needs a mediasoup worker binary (MEDIASOUP_WORKER_BIN)');
    else logger.warn('no mediasoup worker binary: room calls are off (503 SFU_UNAVAILABLE)');
  }
  // The api listens last, so /readyz answering means every role of this process is up.
  if (ctx && roles.has('api')) {
    api = await buildApp({ services: ctx.services, config, logger, metrics });
    await api.listen({ host: config.HOST, port: config.HTTP_PORT });
  }
  // The operations port comes up last too: its /readyz answering 200 means every role of this process is up.
  if (config.OPS_PORT !== undefined) {
    // Each process checks what its roles use: an sfu-only node has no database.
    const readiness = async () => {
      const checks = await platform.health(READINESS_TIMEOUT_MS);
      return ctx ? checks : { redis: checks.redis };
    };
    ops = await startOpsServer({ host: config.HOST, port: config.OPS_PORT, registry: metrics, readiness, logger });
  }

  const urls: string[] = [];
  if (api) {
    const address = api.server.address();
    const port = typeof address === 'object' && address ? address.port : config.HTTP_PORT;
    urls.push(`REST api     http://${config.HOST}:${port}/api`, `OpenAPI      http://${config.HOST}:${port}/v3/api-docs/api-traffic`, `Readiness    http://${config.HOST}:${port}/readyz`);
  }
  if (api) urls.push(`ICE (calls)  ${config.TURN_URLS.split(',')[0]}, ${config.STUN_URLS.split(',')[0]}`);
  if (hub) urls.push(`Socket hub   ws://${config.HOST}:${hub.port}/socket.io/`);
  if (sfu) urls.push(`SFU control  ${sfu.url} (internal)`);
  if (ops) urls.push(`Operations   http://${config.HOST}:${ops.port}/readyz, /metrics (internal)`);
  // Outside production the development chain is named too: a wallet app or `npm run chain:fund` sends deposits to it.
  if (api && config.NODE_ENV !== 'production') urls.push(`Chain (dev)  ${config.EVM_RPC_URL}${config.USDT_TOKEN_ADDRESS ? ` (USDT at ${config.USDT_TOKEN_ADDRESS})` : ''}`);
  logger.info({ roles: [...roles], urls }, 'chat platform started');
  process.stdout.write(`\nChat platform running (${[...roles].join(', ')}):\n${urls.map((url) => `  ${url}`).join('\n')}\n\n`);

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    const force = setTimeout(() => process.exit(1), 15_000);
    force.unref();
    // Stop taking work first, then finish what is running, then drop the connections.
    await Promise.allSettled([api?.close(), hub?.close(), workers?.close(), sfu?.close(), ops?.close()]);
    await (ctx ?? platform).close();
    logger.info('stopped');
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

main().catch((error: unknown) => {
  process.stderr.write(`fatal: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
