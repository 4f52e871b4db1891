import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { projectRoot } from './files.js';

const exec = promisify(execFile);

/**
 * Packs `packages/<name>` as `npm run sdk:pack` and `npm run client:pack` do (scripts/pack-sdk.mjs) into
 * `project`, a folder of its own, and installs the tarball there as a developer would: the installed
 * package's folder. `offline`: npm may not ask the registry (a package with no dependencies).
 */
export async function installPacked(name: 'app-sdk' | 'client', project: string, options: { projectName: string; offline?: boolean }): Promise<string> {
  await mkdir(project, { recursive: true });
  await exec(process.execPath, [path.join(projectRoot, 'scripts', 'pack-sdk.mjs'), project], { cwd: projectRoot, env: { ...process.env, PACKAGE: name } });
  const tarball = (await readdir(project)).find((file) => file.startsWith(`chat-platform-${name}-`) && file.endsWith('.tgz'));
  assert.ok(tarball, 'npm pack made a tarball');
  await writeFile(path.join(project, 'package.json'), JSON.stringify({ name: options.projectName, version: '1.0.0', private: true, type: 'module' }));
  const env = { ...process.env, PATH: `${path.join(projectRoot, 'node_modules', '.bin')}${path.delimiter}${process.env.PATH ?? ''}` };
  await exec('npm', ['install', `./${tarball}`, options.offline ? '--offline' : '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: project, env });
  return path.join(project, 'node_modules', '@chat-platform', name);
}

/** The installed client library's entry (its ESM build), in a project made by {@link installClientLibrary}. */
export const clientLibraryEntry = (project: string) => path.join(project, 'node_modules', '@chat-platform', 'client', 'dist', 'index.js');

/** The client library packed and installed in `project`, as that project imports it. */
export async function installClientLibrary<Library>(project: string): Promise<Library> {
  await installPacked('client', project, { projectName: 'chat-app' });
  return (await import(pathToFileURL(clientLibraryEntry(project)).href)) as Library;
}
