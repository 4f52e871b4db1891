import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const exec = promisify(execFile);
// This file runs from dist/test/integration; the SDK's sources are in the project's tree.
const project = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const sdk = path.join(project, 'packages', 'app-sdk');

/** What an app's server does with the SDK, installed from its tarball outside this repository (issue 24, item 8). */
const CONSUMER = `
import http from 'node:http';
import { createHmac } from 'node:crypto';
import { webhookHandler } from '@chat-platform/app-sdk';

const secret = 'whsec_package-test';
const server = http.createServer(webhookHandler({
  secrets: () => secret,
  commands: { menu: () => ({ type: 'card', card: { blocks: [{ type: 'title', text: 'Menu' }] } }) },
}));
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const body = JSON.stringify({ type: 'invocation', id: 'inv-1', ts: 1, command: 'menu', flow: null, step: null, values: {}, action: null });
const ts = Math.floor(Date.now() / 1000);
const headers = { 'content-type': 'application/json', 'x-service-timestamp': String(ts), 'x-service-delivery': 'd-1', 'x-service-signature': 'v1=' + createHmac('sha256', secret).update(ts + '.' + body).digest('hex') };
const url = 'http://127.0.0.1:' + server.address().port + '/';
const first = await fetch(url, { method: 'POST', headers, body });
const replay = await fetch(url, { method: 'POST', headers, body });
const forged = await fetch(url, { method: 'POST', headers: { ...headers, 'x-service-signature': 'v1=00' }, body });
console.log(JSON.stringify({ first: [first.status, await first.json()], replay: replay.status, forged: forged.status }));
server.close();
`;

describe('the app SDK as a package', () => {
  let work: string;
  before(async () => {
    work = await mkdtemp(path.join(os.tmpdir(), 'app-sdk-package-'));
  });
  after(() => rm(work, { recursive: true, force: true }));

  it('packs with its build and types, installs into a project of its own, and verifies a real delivery there', async () => {
    // npm pack builds it first (prepack: tsc into dist/); tsc comes from the project's node_modules.
    const env = { ...process.env, PATH: `${path.join(project, 'node_modules', '.bin')}:${process.env.PATH ?? ''}` };
    await exec('npm', ['pack', '--pack-destination', work], { cwd: sdk, env });
    const [tarball] = (await readdir(work)).filter((name) => name.endsWith('.tgz'));
    assert.ok(tarball, 'npm pack made a tarball');
    const app = path.join(work, 'app');
    await exec('mkdir', ['-p', app]);
    await writeFile(path.join(app, 'package.json'), JSON.stringify({ name: 'pizza', version: '1.0.0', type: 'module', private: true }));
    await exec('npm', ['install', '--offline', '--no-audit', '--no-fund', path.join(work, tarball)], { cwd: app, env });
    const installed = path.join(app, 'node_modules', '@chat-platform', 'app-sdk');
    const manifest = JSON.parse(await readFile(path.join(installed, 'package.json'), 'utf8')) as { exports: Record<string, { types: string; import: string }> };
    for (const file of [manifest.exports['.']!.types, manifest.exports['.']!.import, 'README.md']) assert.ok(existsSync(path.join(installed, file)), `${file} is in the package`);
    assert.ok(!existsSync(path.join(installed, 'src')), 'the TypeScript sources stay out');

    await writeFile(path.join(app, 'consumer.mjs'), CONSUMER);
    const { stdout } = await exec(process.execPath, ['consumer.mjs'], { cwd: app });
    assert.deepEqual(JSON.parse(stdout), { first: [200, { type: 'card', card: { blocks: [{ type: 'title', text: 'Menu' }] } }], replay: 204, forged: 401 });
  });
});
