import http from 'node:http';
import { readFileSync } from 'node:fs';
import { Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import type { Logger } from './logger.js';

/** What `/readyz` reports: each of the role's own dependencies, `ok` or `down`. */
export type ReadinessChecks = Record<string, 'ok' | 'down'>;

export interface OpsServer {
  port: number;
  close(): Promise<void>;
}

/** The process's metrics registry: Node's own figures (memory, event loop, GC) and whatever each role adds. */
export function createProcessMetrics(): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  // Which build runs: the version, and the commit the image was built from (BUILD_COMMIT, set by the
  // Dockerfile's build argument; `unknown` outside an image).
  new Gauge({ name: 'build_info', help: 'The running build: version and commit (always 1)', labelNames: ['version', 'commit'], registers: [registry] })
    .set({ version: packageVersion(), commit: process.env.BUILD_COMMIT ?? 'unknown' }, 1);
  return registry;
}

/** The service's version, from its package.json (one level above dist/ or the source). */
function packageVersion(): string {
  for (const candidate of ['../../../package.json', '../../package.json']) {
    try {
      return (JSON.parse(readFileSync(new URL(candidate, import.meta.url), 'utf8')) as { version: string }).version;
    } catch {
      // Not there from this build's layout: the next one.
    }
  }
  return 'unknown';
}

/**
 * The operations port every role serves (OPS_PORT): `/healthz` (the process answers), `/readyz` (its
 * own dependencies answer: 200 or 503 with the checks) and `/metrics` (Prometheus text). Plain
 * `node:http`, apart from the public ports, so a probe never queues behind members' requests.
 */
export async function startOpsServer(options: { host: string; port: number; registry: Registry; readiness: () => Promise<ReadinessChecks>; logger: Logger }): Promise<OpsServer> {
  const { registry, readiness, logger } = options;
  const json = (res: http.ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' });
    res.end(JSON.stringify(body));
  };
  const server = http.createServer((req, res) => {
    const url = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') return json(res, 405, { code: 'METHOD_NOT_ALLOWED', message: 'GET only' });
    if (url === '/healthz') return json(res, 200, { status: 'ok' });
    if (url === '/readyz') {
      return void readiness().then(
        (checks) => {
          const ready = Object.values(checks).every((check) => check === 'ok');
          json(res, ready ? 200 : 503, ready ? { status: 'ready', checks } : { code: 'NOT_READY', message: 'a dependency of this process does not answer', details: [checks] });
        },
        (error: unknown) => {
          logger.warn({ err: error }, 'readiness check failed');
          json(res, 503, { code: 'NOT_READY', message: 'the readiness check failed', details: [] });
        },
      );
    }
    if (url === '/metrics') {
      return void registry.metrics().then(
        (text) => {
          res.writeHead(200, { 'content-type': registry.contentType });
          res.end(text);
        },
        (error: unknown) => {
          logger.warn({ err: error }, 'metrics collection failed');
          json(res, 500, { code: 'INTERNAL', message: 'metrics collection failed', details: [] });
        },
      );
    }
    json(res, 404, { code: 'NOT_FOUND', message: 'the operations port serves /healthz, /readyz and /metrics', details: [] });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : options.port;
  logger.info({ port }, 'operations port listening');
  return {
    port,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
