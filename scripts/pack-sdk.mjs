// `npm run sdk:pack [-- <folder>]`: the app SDK's tarball (packages/app-sdk), written to <folder> (the
// current one by default); `npm run client:pack [-- <folder>]` (PACKAGE=client) the client library's
// (packages/client). The package is copied to a folder of its own and built and packed there
// (its prepack compiles src/ into dist/ with the project's TypeScript), so packing never writes into
// this tree. Prints the tarball's path.
import { execFile } from 'node:child_process';
import { cp, mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const exec = promisify(execFile);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const sdk = path.join(root, 'packages', process.env.PACKAGE ?? 'app-sdk');
const destination = path.resolve(process.argv[2] ?? process.cwd());

const staging = await mkdtemp(path.join(os.tmpdir(), `${path.basename(sdk)}-pack-`));
try {
  // What a clean copy of the package holds: its sources, manifest, README and compiler settings.
  for (const entry of ['src', 'package.json', 'README.md', 'tsconfig.json']) await cp(path.join(sdk, entry), path.join(staging, entry), { recursive: true });
  // tsc and Node's types from this project's node_modules (the package's own dev dependencies, when packed from a copy that installed them).
  const env = { ...process.env, PATH: `${path.join(root, 'node_modules', '.bin')}${path.delimiter}${process.env.PATH ?? ''}` };
  await exec('ln', ['-s', path.join(root, 'node_modules'), path.join(staging, 'node_modules')]);
  const { stdout } = await exec('npm', ['pack', '--pack-destination', destination], { cwd: staging, env });
  const tarball = stdout.trim().split('\n').at(-1);
  if (!tarball || !(await readdir(destination)).includes(tarball)) throw new Error(`npm pack did not say which tarball it wrote: ${stdout}`);
  console.log(path.join(destination, tarball));
} finally {
  await rm(staging, { recursive: true, force: true });
}
