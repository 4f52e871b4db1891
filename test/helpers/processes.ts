import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Config } from '../../src/platform/config.js';

const mainJs = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../main.js');

export interface RoleProcess {
  child: ChildProcess;
  /** Everything it printed so far. */
  output(): string;
  kill(signal?: NodeJS.Signals): Promise<void>;
}

/**
 * One role of the service as its own process (`main.js --role=<role>`), on the test's database and Redis
 * prefix, with `env` on top; resolves once `ready(output)` answers true.
 */
export async function spawnRole(role: string, config: Config, env: Record<string, string>, ready: (output: string) => Promise<boolean> | boolean): Promise<RoleProcess> {
  const child = spawn(process.execPath, [mainJs, `--role=${role}`], {
    env: {
      ...process.env,
      MONGODB_URL: config.MONGODB_URL,
      MONGODB_DB: config.MONGODB_DB,
      REDIS_URL: config.REDIS_URL,
      REDIS_PREFIX: config.REDIS_PREFIX,
      JWT_SECRET: config.JWT_SECRET,
      LOG_LEVEL: 'info',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  let exitCode: number | null | undefined;
  const exited = new Promise<void>((resolve) =>
    child.once('exit', (code) => {
      exitCode = code;
      resolve();
    }),
  );
  const deadline = Date.now() + 15_000;
  for (;;) {
    if (exitCode !== undefined) throw new Error(`${role} exited with ${exitCode}: ${output}`);
    if (await ready(output)) break;
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`${role} did not start: ${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    child,
    output: () => output,
    async kill(signal: NodeJS.Signals = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited;
    },
  };
}

/** An api node as its own process (`--role=api`) on a free port; ready when `/readyz` answers 200. */
export async function spawnApi(config: Config, env: Record<string, string> = {}): Promise<RoleProcess & { port: number; url: string }> {
  // Port 0: the api takes a free port itself and names it in its start banner.
  const portOf = (output: string) => /REST api +http:\/\/[\d.]+:(\d+)\/api/.exec(output)?.[1];
  const ready = async (output: string) => {
    const port = portOf(output);
    return port !== undefined && fetch(`http://127.0.0.1:${port}/readyz`).then((res) => res.status === 200, () => false);
  };
  const role = await spawnRole('api', config, { HTTP_PORT: '0', ...env }, ready);
  const port = Number(portOf(role.output()));
  return { port, url: `http://127.0.0.1:${port}`, ...role };
}

/**
 * The port a role logged with `message` ("socket hub listening", "operations port listening"), once it
 * has. Roles are started on port 0 and tell which port they got: a port picked free beforehand can be
 * taken by another test file's process before the role listens on it.
 */
export function loggedPort(output: string, message: string): number | undefined {
  for (const line of output.split('\n')) {
    if (!line.includes(`"msg":"${message}"`)) continue;
    const port = /"port":(\d+)/.exec(line)?.[1];
    if (port) return Number(port);
  }
  return undefined;
}

/** Ready when the role's operations port (OPS_PORT=0, as it logged it) answers /readyz with 200. */
export async function opsReady(output: string): Promise<boolean> {
  const port = loggedPort(output, 'operations port listening');
  return port !== undefined && fetch(`http://127.0.0.1:${port}/readyz`).then((res) => res.status === 200, () => false);
}
