// Builds mediasoup's C++ worker (the SFU behind room calls) from the sources npm installed, against
// Debian's libraries. mediasoup's own build downloads its C++ dependencies through meson wraps,
// which cannot work here, and its prebuilt binaries come from GitHub. mediasoup 3.12 to 3.15 build
// once `worker/meson.build` takes the system libraries through pkg-config (tried on Debian 12).
// The binary is cached outside the repository, keyed by the mediasoup version, so the build
// (about four minutes on two cores) happens once per machine. Node built-ins only.
import { execFileSync } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ensureProductionOpenSsl } from './runtime.mjs';
import { aptInstall, cacheRoot, has, log, quietly } from './stack.mjs';

const BUILD_PACKAGES = [
  'meson', 'ninja-build', 'pkg-config', 'g++', 'python3', 'libssl-dev', 'libuv1-dev', 'libsrtp2-dev',
  'libusrsctp-dev', 'libabsl-dev', 'libflatbuffers-dev', 'flatbuffers-compiler',
];

/**
 * The revision of what this script does to mediasoup's sources: part of the cache key, so a machine
 * that built the worker before a patch was added builds it again. 2: the DTLS BIO patch below.
 */
const BUILD_REVISION = 2;

/** Where the worker binary for the installed mediasoup lives (whether or not it is built yet). */
export function mediasoupWorkerPath(root) {
  const version = installedVersion(root);
  return version ? path.join(cacheRoot, `mediasoup-worker-${version}-r${BUILD_REVISION}`, 'mediasoup-worker') : undefined;
}

/**
 * Patches to mediasoup's C++ sources, each [file, from, to, why]. A patch that no longer matches
 * fails the build (a new mediasoup may have fixed it, or moved the code): look, then drop or redo it.
 */
const SOURCE_PATCHES = [
  [
    'src/RTC/DtlsTransport.cpp',
    '(operationType == BIO_CB_RETURN) ? static_cast<long>(ret) : 1',
    '(operationType & BIO_CB_RETURN) ? static_cast<long>(ret) : 1',
    // The callback on the DTLS transport's in-memory write BIO answers every call OpenSSL makes
    // through it. OpenSSL calls it after a BIO_ctrl with `BIO_CB_CTRL | BIO_CB_RETURN`, which is not
    // equal to BIO_CB_RETURN, so the callback answered 1 ("yes") to every control query in place of
    // the BIO's own answer. Under an OpenSSL built with kernel TLS (Debian 12's and 13's are), one of
    // those queries is BIO_CTRL_GET_KTLS_SEND: the BIO claimed kernel TLS, OpenSSL skipped allocating
    // its write buffer, and the first DTLS record it wrote (the ServerHello of a browser's handshake)
    // dereferenced NULL: SIGSEGV in the worker. Testing the flag bit passes the BIO's real answer.
    'the BIO callback returned 1 for every control query, claiming kernel TLS under an OpenSSL built with it',
  ],
];

function applySourcePatches(source) {
  for (const [file, from, to] of SOURCE_PATCHES) {
    const full = path.join(source, file);
    const text = readFileSync(full, 'utf8');
    if (!text.includes(from)) throw new Error(`${file}: the patch for "${from}" no longer matches mediasoup's source`);
    writeFileSync(full, text.split(from).join(to));
  }
}

function installedVersion(root) {
  const manifest = path.join(root, 'node_modules', 'mediasoup', 'package.json');
  return existsSync(manifest) ? JSON.parse(readFileSync(manifest, 'utf8')).version : undefined;
}

/** The system libraries that replace each meson subproject variable mediasoup asks for. */
const SYSTEM_DEPENDENCIES = {
  "openssl_proj.get_variable('openssl_dep')": "dependency('openssl')",
  "libuv_proj.get_variable('libuv_dep')": "dependency('libuv')",
  // Debian installs srtp.h under srtp2/, where mediasoup's own subproject exposed it at the top;
  // SRTP_COMPAT bridges the few calls where mediasoup's libsrtp fork differs from libsrtp 2.
  "libsrtp2_proj.get_variable('libsrtp2_dep')":
    "declare_dependency(dependencies: dependency('libsrtp2'), compile_args: ['-I' + dependency('libsrtp2').get_variable(pkgconfig: 'includedir') / 'srtp2', '-include', meson.project_source_root() / 'ms-srtp-compat.h'])",
  "usrsctp_proj.get_variable('usrsctp_dep')": "dependency('usrsctp')",
  "flatbuffers_proj.get_variable('flatbuffers_dep')": "dependency('flatbuffers')",
  "abseil_cpp_proj.get_variable('absl_container_dep')":
    "[dependency('absl_flat_hash_map'), dependency('absl_flat_hash_set'), dependency('absl_btree'), dependency('absl_inlined_vector')]",
  "abseil_cpp_proj.get_variable('absl_strings_dep')": "dependency('absl_strings')",
  "abseil_cpp_proj.get_variable('absl_types_dep')": "[dependency('absl_optional'), dependency('absl_memory')]",
};

/**
 * mediasoup's libsrtp fork (3.0-alpha) takes lengths as size_t* and calls srtp_remove_stream
 * srtp_stream_remove; libsrtp 2 takes int*. C++ overloads bridge the difference, nothing else changes.
 */
const SRTP_COMPAT = `#pragma once
#include <srtp.h>
#include <cstddef>
#define MS_SRTP_LEN_BRIDGE(name) \\
  inline srtp_err_status_t name(srtp_t ctx, void* data, size_t* len) { \\
    int n = static_cast<int>(*len); \\
    const srtp_err_status_t status = name(ctx, data, &n); \\
    *len = static_cast<size_t>(n); \\
    return status; \\
  }
MS_SRTP_LEN_BRIDGE(srtp_protect)
MS_SRTP_LEN_BRIDGE(srtp_unprotect)
MS_SRTP_LEN_BRIDGE(srtp_protect_rtcp)
MS_SRTP_LEN_BRIDGE(srtp_unprotect_rtcp)
inline srtp_err_status_t srtp_stream_remove(srtp_t session, unsigned int ssrc) { return srtp_remove_stream(session, ssrc); }
`;

function patchMesonFile(file, { keepUntil } = {}) {
  let text = readFileSync(file, 'utf8');
  if (keepUntil) {
    // Drop the tests and fuzzers after the worker executable: they need Catch2 3 and clang.
    const end = text.indexOf('\n)\n', text.indexOf(keepUntil));
    text = text.slice(0, end + 3);
  }
  // Subproject declarations go; the libraries they built come from pkg-config instead.
  text = text.replace(/^\w+_proj = subproject\([\s\S]*?^\)\n/gm, '');
  text = text.replace(/^\s+\w+_proj = subproject\('liburing'.*\n/gm, '');
  for (const [from, to] of Object.entries(SYSTEM_DEPENDENCIES)) text = text.split(from).join(to);
  // Static archives linked whole from the subprojects: the shared system libraries replace them.
  text = text.replace(/^\s+\w+_proj\.get_variable\('\w+'\),?\n/gm, '');
  if (/_proj\./.test(text)) throw new Error(`${file}: a subproject reference is left unpatched`);
  writeFileSync(file, text);
}

/**
 * Returns the path of a worker binary for the installed mediasoup, building it first when this
 * machine has none. Returns undefined when mediasoup is not installed (it is an optional dependency).
 */
export function ensureMediasoupWorker(root) {
  const binary = mediasoupWorkerPath(root);
  if (!binary) return undefined;
  if (existsSync(binary)) return binary;

  const missing = BUILD_PACKAGES.filter((pkg) => !isInstalled(pkg));
  if (missing.length > 0) aptInstall(missing);

  // A build folder of its own: two first starts on one machine (npm start and npm test, say) each
  // build in their own folder, and the first to finish installs the binary by an atomic rename.
  mkdirSync(path.dirname(binary), { recursive: true });
  const buildRoot = mkdtempSync(path.join(path.dirname(binary), 'build-'));
  try {
    const source = path.join(buildRoot, 'worker');
    cpSync(path.join(root, 'node_modules', 'mediasoup', 'worker'), source, { recursive: true });
    rmSync(path.join(source, 'subprojects'), { recursive: true, force: true });
    patchMesonFile(path.join(source, 'meson.build'), { keepUntil: "executable(\n  'mediasoup-worker'" });
    // Debian 12 has meson 1.0.1; nothing the worker's build uses needs 1.1.
    const mesonBuild = path.join(source, 'meson.build');
    writeFileSync(mesonBuild, readFileSync(mesonBuild, 'utf8').replace(/meson_version: '>= 1\.1\.0'/, "meson_version: '>= 1.0.0'"));
    patchMesonFile(path.join(source, 'deps', 'libwebrtc', 'meson.build'));
    writeFileSync(path.join(source, 'ms-srtp-compat.h'), SRTP_COMPAT);
    applySourcePatches(source);

    log(`building mediasoup-worker ${path.basename(path.dirname(binary))} (about 5 minutes on two cores, once per machine)`);
    const out = path.join(buildRoot, 'out');
    const env = { ...process.env, MESON_PACKAGE_CACHE_DIR: buildRoot };
    const started = Date.now();
    quietly('meson', ['setup', '--buildtype=release', '-Dms_disable_liburing=true', '--wrap-mode=nodownload', out, source], { env });
    // The generated flatbuffers headers first: the libwebrtc objects include them without saying so.
    quietly('ninja', ['-C', out, 'fbs/FBS'], { env });
    quietly('ninja', ['-C', out, 'mediasoup-worker'], { env });
    log(`mediasoup-worker built in ${Math.round((Date.now() - started) / 1000)} s`);
    const staged = path.join(buildRoot, 'mediasoup-worker');
    copyFileSync(path.join(out, 'mediasoup-worker'), staged);
    // rename(2) replaces atomically: a concurrent build that finished first loses nothing.
    renameSync(staged, binary);
  } finally {
    // Whether it worked or not: a failed build leaves nothing behind, so the next start tries again.
    rmSync(buildRoot, { recursive: true, force: true });
  }
  return binary;
}

/** The C and C++ runtime every Linux image has, and OpenSSL 3 (its security updates come with the system): left to the system. */
const SYSTEM_RUNTIME = /^(libc|libm|libpthread|libdl|librt|libstdc\+\+|libgcc_s|ld-linux-x86-64|libssl|libcrypto)\.so/;

/**
 * Copies the worker and every shared library it loads besides the C and C++ runtime into `dest`
 * (`dest/mediasoup-worker`, `dest/lib/`), the binary pointed at `$ORIGIN/lib`: it then runs on any
 * glibc at least as new as the build's, without the build's Debian release's library packages (the
 * production image builds on Debian 12 and runs on Debian 13, whose abseil and flatbuffers differ).
 */
export function bundleWorker(binary, dest) {
  if (!has('patchelf')) aptInstall(['patchelf']);
  rmSync(dest, { recursive: true, force: true });
  mkdirSync(path.join(dest, 'lib'), { recursive: true });
  const libraries = execFileSync('ldd', [binary], { encoding: 'utf8' })
    .split('\n')
    .map((line) => /^\s*(\S+) => (\/\S+)/.exec(line))
    .filter((match) => match && !SYSTEM_RUNTIME.test(match[1]));
  for (const [, name, file] of libraries) copyFileSync(file, path.join(dest, 'lib', name));
  const worker = path.join(dest, 'mediasoup-worker');
  copyFileSync(binary, worker);
  // DT_RPATH, not RUNPATH: the bundled libraries' own dependencies resolve from the bundle too.
  execFileSync('patchelf', ['--force-rpath', '--set-rpath', '$ORIGIN/lib', worker]);
  for (const [, name] of libraries) execFileSync('patchelf', ['--force-rpath', '--set-rpath', '$ORIGIN', path.join(dest, 'lib', name)]);
  return worker;
}

/**
 * The worker as the production image runs it: bundled as the Dockerfile bundles it (built here, on
 * Debian 12), then run on Debian 13's C library and OpenSSL 3.5 (unpacked into the cache, as
 * scripts/runtime.mjs does for Node) instead of this machine's. The browser test drives a room call
 * through it, so the image's OpenSSL is checked the same way as this machine's. Returns its path.
 */
export function productionWorker(binary, dest) {
  const libs = ensureProductionOpenSsl();
  const worker = bundleWorker(binary, dest);
  execFileSync('patchelf', ['--set-interpreter', path.join(libs, 'ld-linux-x86-64.so.2'), '--force-rpath', '--set-rpath', `$ORIGIN/lib:${libs}`, worker]);
  return worker;
}

function isInstalled(pkg) {
  if (pkg === 'meson' || pkg === 'python3') return has(pkg);
  if (pkg === 'ninja-build') return has('ninja');
  if (pkg === 'g++') return has('g++');
  if (pkg === 'flatbuffers-compiler') return has('flatc');
  try {
    return execFileSync('dpkg-query', ['-W', '-f=${Status}', pkg], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).includes('install ok installed');
  } catch {
    return false;
  }
}

// `node scripts/mediasoup-worker.mjs [--bundle DIR]` builds (when needed) and prints the binary's path;
// with --bundle, copies it with its libraries into DIR (the Dockerfile uses that).
if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(new URL(import.meta.url).pathname)) {
  const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
  const binary = ensureMediasoupWorker(root);
  if (!binary) {
    process.stderr.write('mediasoup is not installed: run npm ci first\n');
    process.exit(1);
  }
  const bundle = process.argv.indexOf('--bundle');
  process.stdout.write(`${bundle > 0 ? bundleWorker(binary, path.resolve(process.argv[bundle + 1])) : binary}\n`);
}
