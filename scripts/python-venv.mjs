// Python tools the tests and the fuzzer use, from PyPI with exact versions, each in a virtual
// environment made once per machine under the cache folder (the system's Python is not touched).
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { aptInstall, cacheRoot, has, log } from './stack.mjs';

/** What the generated-client test installs: openapi-python-client and what the clients it writes import. */
export const PYTHON_CLIENT_REQUIREMENTS = ['openapi-python-client==0.29.1', 'httpx==0.28.1', 'attrs==26.1.0', 'python-dateutil==2.9.0.post0'];

/**
 * What the socket test installs: python-socketio's client (a Socket.IO client nobody here wrote) with
 * the WebSocket and HTTP libraries it uses, every one pinned.
 */
export const SOCKET_CLIENT_REQUIREMENTS = [
  'python-socketio==5.18.1',
  'python-engineio==4.15.1',
  'websocket-client==1.9.2',
  'requests==2.34.2',
  'bidict==0.24.1',
  'simple-websocket==1.1.0',
  'wsproto==1.3.2',
  'h11==0.16.0',
  'certifi==2026.10.19.post1',
  'charset-normalizer==3.5.3',
  'idna==3.20',
  'urllib3==2.8.0',
  'typing_extensions==4.16.0',
];

/**
 * A virtual environment named `name` holding exactly `requirements` (pip specifiers with `==`); its
 * folder. Made again when the requirements change.
 */
export function ensureVenv(name, requirements) {
  const venv = path.join(cacheRoot, `python-${name}`);
  const marker = path.join(venv, 'requirements.installed');
  const wanted = `${requirements.join('\n')}\n`;
  if (existsSync(marker) && readFileSync(marker, 'utf8') === wanted) return venv;
  if (!has('python3')) aptInstall(['python3', 'python3-venv']);
  try {
    execFileSync('python3', ['-m', 'venv', '--clear', venv], { stdio: ['ignore', 'inherit', 'inherit'] });
  } catch {
    aptInstall(['python3-venv']);
    execFileSync('python3', ['-m', 'venv', '--clear', venv], { stdio: ['ignore', 'inherit', 'inherit'] });
  }
  log(`installing ${requirements.join(', ')} from PyPI into ${venv}`);
  execFileSync(path.join(venv, 'bin', 'python'), ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', ...requirements], { stdio: ['ignore', 'inherit', 'inherit'] });
  writeFileSync(marker, wanted);
  return venv;
}
