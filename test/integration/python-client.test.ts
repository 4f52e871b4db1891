import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { startTestApp, type TestApp } from '../helpers/app.js';

const exec = promisify(execFile);
// This file runs from dist/test/integration; the Python script stays in the source tree.
const project = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const FLOW = path.join(project, 'test', 'python', 'client_flow.py');

/**
 * What a Python integrator meets (issue 31): openapi-python-client, pinned, from PyPI (scripts/test.mjs
 * makes its virtual environment), generates a client from each served document without a warning;
 * every module imports; a script using only those clients (and httpx, which they are built on)
 * signs in, makes a room, posts, uploads a picture with its JSON payload part both ways, reads the
 * messages back and reaches the payments interface with a payments key.
 */
describe('Python clients generated from the served documents', () => {
  let t: TestApp;
  let baseUrl: string;
  let work: string;
  const venv = process.env.PYTHON_CLIENT_VENV;
  const bin = (name: string) => path.join(venv ?? '', 'bin', name);
  // The generator runs ruff from the same environment to format what it writes.
  const env = { ...process.env, PATH: `${path.join(venv ?? '', 'bin')}:${process.env.PATH ?? ''}` };

  before(async () => {
    assert.ok(venv, 'PYTHON_CLIENT_VENV is not set: run the tests through npm test, which makes the environment');
    t = await startTestApp({ WEBHOOK_ALLOW_PRIVATE: 'true' });
    await t.app.listen({ host: '127.0.0.1', port: 0 });
    const address = t.app.server.address();
    baseUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
    work = await mkdtemp(path.join(os.tmpdir(), 'python-client-'));
  });
  after(async () => {
    await rm(work, { recursive: true, force: true });
    await t?.close();
  });

  const generate = async (document: string, name: string) => {
    const file = path.join(work, `${name}.json`);
    await writeFile(file, await (await fetch(`${baseUrl}${document}`)).text());
    const { stdout, stderr } = await exec(bin('openapi-python-client'), ['generate', '--path', file, '--meta', 'none', '--output-path', path.join(work, name)], { env, cwd: work });
    return `${stdout}${stderr}`;
  };

  it('generates both clients without a warning, and every module imports', async () => {
    for (const [document, name] of [['/v3/api-docs/api-traffic', 'api_client'], ['/v3/api-docs/app-api', 'app_client']] as const) {
      const output = await generate(document, name);
      assert.doesNotMatch(output, /warning|unable to|error/i, `${name}: ${output}`);
      const imported = await exec(
        bin('python'),
        ['-c', `import importlib, pkgutil, ${name} as m\nn = 0\nfor info in pkgutil.walk_packages(m.__path__, '${name}.'):\n    importlib.import_module(info.name); n += 1\nprint(n)`],
        { cwd: work, env },
      );
      assert.ok(Number(imported.stdout.trim()) > 10, `${name}: ${imported.stdout}`);
    }
  });

  it('a script on those clients signs in, makes a room, posts, uploads with a JSON payload part, reads back and reaches the payments interface', async () => {
    const phone = `+49151${Math.floor(10_000_000 + Math.random() * 89_999_999)}`;
    const { stdout } = await exec(bin('python'), [FLOW, work, baseUrl, t.outbox, phone], { cwd: work, env });
    const seen = JSON.parse(stdout.trim().split('\n').at(-1) ?? '{}') as Record<string, unknown>;
    assert.deepEqual(
      new Set(seen.messages as string[]),
      new Set(['Hello from Python', 'A picture, payload as text', 'A picture, payload as JSON']),
      'the post and both uploads\' payload messages read back',
    );
    assert.equal(seen.uploadAsText, 204);
    assert.equal(seen.uploadAsJson, 204);
    assert.equal(seen.withAttachments, 2);
    assert.equal(seen.createdAtType, 'datetime', 'times parse as date-times');
    assert.equal(seen.keyPrefix, 'bpk_');
    assert.equal(seen.testKeyPrefix, 'bpk_test_');
    assert.deepEqual(seen.balanceTest, [false, true]);
    assert.ok(Array.isArray(seen.balances));
    assert.equal(await t.db.collection('attachments').countDocuments({ roomId: seen.roomId }), 2);
  });
});
