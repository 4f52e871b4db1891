import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { projectRoot } from './files.js';

const exec = promisify(execFile);

/** The installed library's entry (its ESM build), in a project made by {@link installClientLibrary}. */
export const clientLibraryEntry = (work: string) => path.join(work, 'node_modules', '@chat-platform', 'client', 'dist', 'index.js');

/**
 * Packs packages/client as `npm run client:pack` does and installs the tarball in `work`, a project of
 * its own, as an app developer would; the library as that project imports it.
 */
export async function installClientLibrary<Library>(work: string): Promise<Library> {
  await exec(process.execPath, [path.join(projectRoot, 'scripts', 'pack-sdk.mjs'), work], { cwd: projectRoot, env: { ...process.env, PACKAGE: 'client' } });
  const tarball = (await readdir(work)).find((file) => file.startsWith('chat-platform-client-') && file.endsWith('.tgz'));
  assert.ok(tarball, 'the pack wrote a tarball');
  await writeFile(path.join(work, 'package.json'), JSON.stringify({ name: 'chat-app', version: '1.0.0', private: true, type: 'module' }));
  await exec('npm', ['install', `./${tarball}`, '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: work });
  return (await import(pathToFileURL(clientLibraryEntry(work)).href)) as Library;
}
