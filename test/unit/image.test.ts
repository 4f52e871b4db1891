import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

/** The build stage of the Dockerfile: its COPY sources (from the build context) and its TypeScript build command. */
function buildStage(dockerfile: string) {
  const stages = dockerfile.split(/^FROM /m).slice(1);
  const stage = stages[0]!;
  const copies: { sources: string[]; dest: string }[] = [];
  for (const line of stage.split('\n')) {
    const words = line.trim().split(/\s+/);
    if (words[0] !== 'COPY' || words.some((word) => word.startsWith('--from'))) continue;
    const args = words.slice(1).filter((word) => !word.startsWith('--'));
    copies.push({ sources: args.slice(0, -1), dest: args.at(-1)! });
  }
  const tsc = /npx tsc ([^&\n]+)/.exec(stage)?.[1]?.trim().split(/\s+/);
  return { copies, tsc };
}

describe('the production image', () => {
  it("compiles from exactly the build context its Dockerfile's build stage copies", () => {
    const { copies, tsc } = buildStage(readFileSync(path.join(root, 'Dockerfile'), 'utf8'));
    assert.ok(tsc, 'the build stage runs no `npx tsc`');
    assert.ok(copies.length > 0);
    const context = mkdtempSync(path.join(os.tmpdir(), 'image-context-'));
    try {
      for (const { sources, dest } of copies) {
        for (const source of sources) {
          const target = dest.endsWith('/') || sources.length > 1 ? path.join(context, dest, path.basename(source)) : path.join(context, dest);
          cpSync(path.join(root, source), target, { recursive: true });
        }
      }
      // What `npm ci` installed from the copied package.json and lockfile.
      symlinkSync(path.join(root, 'node_modules'), path.join(context, 'node_modules'));
      execFileSync(process.execPath, [path.join(root, 'node_modules/typescript/bin/tsc'), ...tsc], { cwd: context, stdio: 'pipe' });
      assert.ok(existsSync(path.join(context, 'dist', 'main.js')), 'no dist/main.js: the image would have no entry point');
      // Nothing of the tests, benches, SDK or examples is in the image.
      assert.ok(!existsSync(path.join(context, 'dist', 'test')));
    } catch (error) {
      const out = error as { stdout?: Buffer };
      assert.fail(`the image's build context does not compile:\n${out.stdout?.toString() ?? String(error)}`);
    } finally {
      rmSync(context, { recursive: true, force: true });
    }
  });

  it('runs the entry point the build produces, on Node 24 LTS, with the system packages every role needs', () => {
    const dockerfile = readFileSync(path.join(root, 'Dockerfile'), 'utf8');
    const runtime = dockerfile.split(/^FROM /m).at(-1)!;
    assert.match(runtime, /^node:24-trixie-slim/);
    for (const pkg of ['ffmpeg', 'pocketsphinx', 'pocketsphinx-en-us', 'tini']) assert.match(runtime, new RegExp(`\\s${pkg}\\s`), `${pkg} is not installed in the runtime image`);
    assert.match(runtime, /ENTRYPOINT \[.*"dist\/main\.js"\]/);
    assert.match(runtime, /^USER node$/m);
    for (const copy of runtime.split('\n').filter((line) => line.startsWith('COPY --from=build'))) assert.match(copy, /--chown=node:node/, `${copy}: files must belong to the user that runs them`);
  });
});
