import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from './ports.js';

const productionConf = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../deploy/nginx.conf');
const nginxBin = ['/usr/sbin/nginx', '/usr/bin/nginx'].find(existsSync) ?? 'nginx';

export interface Front {
  port: number;
  url: string;
  stop(): Promise<void>;
}

/**
 * Debian's nginx running the production front (deploy/nginx.conf) with its upstreams pointed at this
 * test's processes: `upstreams.api` and `upstreams.hubs` replace the compose service addresses in order.
 */
export async function startFront(upstreams: { api: number[]; hubs: number[] }): Promise<Front> {
  const dir = mkdtempSync(path.join(process.env.TEST_TMP ?? os.tmpdir(), 'nginx-'));
  const port = await freePort();
  let conf = readFileSync(productionConf, 'utf8');
  const swap = (service: RegExp, ports: number[]) => {
    let i = 0;
    conf = conf.replace(service, (line) => line.replace(/[\w-]+:\d+/, `127.0.0.1:${ports[i++] ?? 1}`));
    if (i !== ports.length) throw new Error(`deploy/nginx.conf has ${i} servers for ${ports.length} processes`);
  };
  swap(/server api-\d+:8080[^;]*;/g, upstreams.api);
  swap(/server realtime-\d+:8081[^;]*;/g, upstreams.hubs);
  if (!conf.includes('listen 80')) throw new Error('deploy/nginx.conf no longer listens on 80');
  // Every server block (the service's, and the media host's) on the test's port.
  conf = conf.replace(/listen 80( default_server)?;/g, (_line, defaultServer: string | undefined) => `listen 127.0.0.1:${port}${defaultServer ?? ''};`);
  // Temporary files under the test's folder (nginx's defaults are under /var/lib/nginx).
  const temp = ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((kind) => {
    mkdirSync(path.join(dir, kind));
    return `  ${kind}_temp_path ${path.join(dir, kind)};`;
  });
  conf = conf.replace(/^http \{$/m, `http {\n${temp.join('\n')}`);
  const file = path.join(dir, 'nginx.conf');
  writeFileSync(file, conf);
  const child: ChildProcess = spawn(nginxBin, ['-p', dir, '-c', file, '-g', `daemon off; pid ${path.join(dir, 'nginx.pid')}; error_log stderr warn;`], { stdio: ['ignore', 'ignore', 'pipe'] });
  let errors = '';
  child.stderr!.on('data', (chunk: Buffer) => (errors += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 10_000;
  while (!(await fetch(`${url}/healthz`).then(() => true, () => false))) {
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`nginx did not start: ${errors}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    port,
    url,
    async stop() {
      if (child.exitCode === null) child.kill('SIGQUIT');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
