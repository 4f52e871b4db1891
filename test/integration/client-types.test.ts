import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { projectRoot } from '../helpers/files.js';

interface ClientTypesScript {
  restTypes(openapiText: string): Promise<string>;
  eventTypes(asyncapi: unknown): Promise<string>;
}

const generated = path.join(projectRoot, 'packages', 'client', 'src', 'generated');

/**
 * The client library is typed by the documents the service serves (issue 56): its generated files are
 * made again from them here and must equal what is committed. `npm run client:types` writes them.
 */
describe('the client library\'s generated types', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp();
  });
  after(() => t.close());

  it('belong to a library versioned with the API', async () => {
    const openapi = (await t.app.inject({ method: 'GET', url: '/v3/api-docs/api-traffic' })).json() as { info: { version: string } };
    const library = JSON.parse(await readFile(path.join(projectRoot, 'packages', 'client', 'package.json'), 'utf8')) as { version: string };
    assert.equal(library.version, openapi.info.version, 'packages/client/package.json\'s version is the API\'s');
  });

  it('are what the served OpenAPI and AsyncAPI documents make', async () => {
    const script = (await import(pathToFileURL(path.join(projectRoot, 'scripts', 'client-types.mjs')).href)) as ClientTypesScript;
    const openapi = await t.app.inject({ method: 'GET', url: '/v3/api-docs/api-traffic' });
    const asyncapi = await t.app.inject({ method: 'GET', url: '/v3/asyncapi/device-socket' });
    assert.equal(openapi.statusCode, 200);
    assert.equal(asyncapi.statusCode, 200);
    const files = { 'api.ts': await script.restTypes(openapi.body), 'events.ts': await script.eventTypes(asyncapi.json()) };
    for (const [name, text] of Object.entries(files)) {
      const file = path.join(generated, name);
      if (process.env.CLIENT_TYPES_WRITE === '1') await writeFile(file, text);
      const committed = await readFile(file, 'utf8').catch(() => '');
      assert.ok(committed === text, `packages/client/src/generated/${name} is not what the documents make: run npm run client:types`);
    }
  });
});
