import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import SwaggerParser from '@apidevtools/swagger-parser';
import { errorCatalogue } from '../../src/error-catalogue.js';
import { startTestApp, type TestApp } from '../helpers/app.js';

type Operation = { responses: Record<string, { description?: string }>; security?: unknown[]; requestBody?: unknown };
type Doc = { openapi: string; info: { version: string }; paths: Record<string, Record<string, Operation>> };

describe('OpenAPI document', () => {
  let t: TestApp;
  let doc: Doc;
  before(async () => {
    t = await startTestApp();
    const res = await t.app.inject({ url: '/v3/api-docs/api-traffic' });
    assert.equal(res.statusCode, 200);
    doc = res.json();
  });
  after(() => t.close());

  it('is a valid OpenAPI 3 document by an independent validator', async () => {
    assert.match(doc.openapi, /^3\./);
    await SwaggerParser.validate(structuredClone(doc) as never);
  });

  it('is what generators need (issue 31): named union variants with discriminators, date-times, no unused records, a server', async () => {
    const both = [doc as unknown as Record<string, unknown>, (await t.app.inject({ url: '/v3/api-docs/app-api' })).json() as Record<string, unknown>];
    for (const document of both) {
      const schemas = (document.components as { schemas: Record<string, unknown> }).schemas;
      const refsOf = (value: unknown, into = new Set<string>()): Set<string> => {
        if (Array.isArray(value)) for (const item of value) refsOf(item, into);
        else if (value && typeof value === 'object') {
          for (const [key, child] of Object.entries(value)) {
            if (key === '$ref' && typeof child === 'string') into.add(child.split('/').at(-1)!);
            else refsOf(child, into);
          }
        }
        return into;
      };
      const used = refsOf(document.paths);
      for (const pending = [...used]; pending.length > 0; ) for (const inner of refsOf(schemas[pending.pop()!])) if (!used.has(inner) && pending.push(inner)) used.add(inner);
      assert.deepEqual(Object.keys(schemas).filter((name) => !used.has(name)), [], 'records no operation uses');
      // Every oneOf/anyOf: named variants (or null); a oneOf of records told apart by a field has its discriminator.
      const unions: { at: string; node: Record<string, unknown> }[] = [];
      const walk = (value: unknown, at: string) => {
        if (Array.isArray(value)) value.forEach((item, i) => walk(item, `${at}[${i}]`));
        else if (value && typeof value === 'object') {
          const node = value as Record<string, unknown>;
          if (Array.isArray(node.oneOf) || Array.isArray(node.anyOf)) unions.push({ at, node });
          for (const [key, child] of Object.entries(node)) walk(child, `${at}/${key}`);
        }
      };
      walk(document, '');
      for (const { at, node } of unions) {
        const variants = (node.oneOf ?? node.anyOf) as Record<string, unknown>[];
        const inline = variants.filter((v) => !('$ref' in v) && (v.type === 'object' || 'properties' in v));
        assert.deepEqual(inline, [], `an inline object in a union at ${at}`);
      }
      assert.ok(document.servers && (document.servers as unknown[]).length === 1, 'a servers entry');
    }
    const schemas = (doc as unknown as { components: { schemas: Record<string, { properties?: Record<string, Record<string, unknown>>; discriminator?: { propertyName: string; mapping: Record<string, string> } }> } }).components.schemas;
    assert.deepEqual(schemas.CallSignalRequest!.discriminator, {
      propertyName: 'kind',
      mapping: { offer: '#/components/schemas/CallSignalOffer', answer: '#/components/schemas/CallSignalAnswer', candidate: '#/components/schemas/CallSignalCandidate' },
    });
    assert.equal(schemas.AppCardBlock!.discriminator!.propertyName, 'type');
    assert.equal(Object.keys(schemas.AppViewBlock!.discriminator!.mapping).length, 8);
    assert.equal(schemas.RoomDto!.properties!.createdAt!.format, 'date-time');
    assert.deepEqual(schemas.MessageDto!.properties!.card!.anyOf, [{ $ref: '#/components/schemas/AppCard' }, { type: 'null' }]);
    assert.deepEqual((schemas.ErrorResponse!.properties!.details!.items as { $ref: string }).$ref, '#/components/schemas/ErrorDetail');
  });

  it('carries version 1.0.99', () => {
    assert.equal(doc.info.version, '1.0.99');
  });

  it('lists every /api route the app serves, with every method', () => {
    const served = new Set(
      t.app.routeTable.filter((route) => route.includes(' /api/')).map((route) => route.replace(/:(\w+)/g, '{$1}')),
    );
    const documented = new Set(
      Object.entries(doc.paths).flatMap(([path, operations]) => Object.keys(operations).map((method) => `${method.toUpperCase()} ${path}`)),
    );
    assert.ok(served.size >= 15, `only ${served.size} routes served`);
    assert.deepEqual([...served].sort(), [...documented].sort());
  });

  it('gives every operation its success status and the error statuses it can answer', () => {
    for (const [path, operations] of Object.entries(doc.paths)) {
      for (const [method, operation] of Object.entries(operations)) {
        const statuses = Object.keys(operation.responses);
        const where = `${method.toUpperCase()} ${path}`;
        assert.ok(statuses.some((s) => /^2\d\d$/.test(s)), `${where}: no success status`);
        for (const s of ['400', '500']) assert.ok(statuses.includes(s), `${where}: no ${s}`);
        if (operation.security) assert.ok(statuses.includes('401'), `${where}: authenticated but no 401`);
        if (operation.requestBody) for (const s of ['413', '415']) assert.ok(statuses.includes(s), `${where}: has a body but no ${s}`);
        // Any POST, PUT, PATCH or DELETE can be sent a body over the limit, whether or not it takes one.
        if (['post', 'put', 'patch', 'delete'].includes(method)) assert.ok(statuses.includes('413'), `${where}: can be sent a body but documents no 413`);
      }
    }
  });

  it('names records as the spec does, one schema each, and gives every operation a unique operationId', () => {
    const names = Object.keys((doc as unknown as { components: { schemas: Record<string, unknown> } }).components.schemas);
    assert.deepEqual(names.filter((name) => name.endsWith('Input')), [], 'no Input twins');
    const e2eeRecords = ['E2eeIdentityRequest', 'E2eeKeyBackupRequest', 'E2eeKeyBackupDto', 'E2eeKeyShareUploadRequest', 'E2eeKeyRequest', 'E2eeKeySharesDto', 'E2eeAttachmentUploadedDto', 'EncryptedAttachmentUploadForm'];
    for (const record of ['ChatMessage', 'RoomSearchRequest', 'PushTokenUpdateRequest', 'BiometricKeyEnrollRequest', 'ErrorResponse', 'RoomDto', 'MessageDto', ...e2eeRecords]) {
      assert.ok(names.includes(record), `${record} is a component`);
    }
    const ids = Object.values(doc.paths).flatMap((operations) => Object.values(operations).map((operation) => (operation as { operationId?: string }).operationId));
    assert.ok(ids.every((id) => typeof id === 'string' && /^[a-z][A-Za-z0-9]*$/.test(id)), 'every operation has an operationId');
    assert.equal(new Set(ids).size, ids.length, 'operationIds are unique');
  });

  it('describes the multipart uploads, boolean query parameters and 32-bit paging as clients need them', () => {
    type Op = { requestBody?: { content: Record<string, { schema: { $ref?: string } }> }; parameters?: { name: string; in: string; schema: { type?: string; format?: string } }[] };
    const op = (path: string, method: string) => (doc.paths[path] as unknown as Record<string, Op>)[method]!;
    assert.equal(op('/api/speech-to-text', 'post').requestBody?.content['multipart/form-data']?.schema.$ref, '#/components/schemas/AudioUploadForm');
    assert.equal(op('/api/messages/{roomId}/attachments', 'post').requestBody?.content['multipart/form-data']?.schema.$ref, '#/components/schemas/AttachmentsUploadForm');
    assert.equal(op('/api/e2ee/rooms/{roomId}/attachments', 'post').requestBody?.content['multipart/form-data']?.schema.$ref, '#/components/schemas/EncryptedAttachmentUploadForm');
    const csv = (doc.paths['/api/apps/{appId}/activity.csv'] as unknown as Record<string, { responses: Record<string, { content: Record<string, unknown> }> }>).get!;
    assert.deepEqual([Object.keys(csv.responses['200']!.content), Object.keys(csv.responses['400']!.content)], [['text/csv'], ['application/json']], 'a download, with JSON errors');
    const muted = op('/api/rooms/{roomId}/muted', 'post').parameters?.find((p) => p.name === 'muted');
    assert.equal(muted?.schema.type, 'boolean');
    const pageSize = op('/api/rooms', 'get').parameters?.find((p) => p.name === 'pageSize');
    assert.deepEqual([pageSize?.schema.type, pageSize?.schema.format], ['integer', 'int32']);
  });

  it('states the constraints the server enforces on path parameters', () => {
    const loose: string[] = [];
    for (const [path, operations] of Object.entries(doc.paths)) {
      for (const [method, operation] of Object.entries(operations)) {
        const params = ((operation as { parameters?: { name: string; in: string; schema?: { pattern?: string; maxLength?: number; enum?: unknown[] } }[] }).parameters ?? []).filter((p) => p.in === 'path');
        for (const p of params) if (!p.schema?.enum && (p.schema?.pattern === undefined || p.schema?.maxLength === undefined)) loose.push(`${method.toUpperCase()} ${path} ${p.name}`);
      }
    }
    assert.deepEqual(loose, []);
  });

  it('names, for every error status of every operation, the declared codes it can answer', () => {
    const declared = new Map(errorCatalogue().map((error) => [error.code, error.status]));
    let named = 0;
    for (const [path, operations] of Object.entries(doc.paths)) {
      for (const [method, operation] of Object.entries(operations)) {
        for (const [status, response] of Object.entries(operation.responses)) {
          if (!/^[45]\d\d$/.test(status)) continue;
          const codes = /Codes: ([A-Z0-9_, ]+)\.$/.exec(response.description ?? '')?.[1]?.split(', ');
          assert.ok(codes && codes.length > 0, `${method.toUpperCase()} ${path} ${status}: no codes named`);
          for (const code of codes) assert.equal(declared.get(code), Number(status), `${method.toUpperCase()} ${path} ${status}: ${code}`);
          named += codes.length;
        }
      }
    }
    assert.ok(named > 300, `only ${named} codes named`);
  });

  it('every documented route outside /api/auth answers 401 without a token', async () => {
    let checked = 0;
    for (const [path, operations] of Object.entries(doc.paths)) {
      for (const method of Object.keys(operations)) {
        if (path.startsWith('/api/auth/') && path !== '/api/auth/logout') continue;
        const url = path.replace(/\{[^}]+\}/g, 'some-id');
        const res = await t.app.inject({ method: method.toUpperCase() as 'GET', url, payload: method === 'get' || method === 'delete' ? undefined : {} });
        assert.equal(res.statusCode, 401, `${method.toUpperCase()} ${path}`);
        assert.equal(res.json().code, 'UNAUTHORIZED');
        checked++;
      }
    }
    assert.ok(checked >= 11, `only ${checked} routes checked`);
  });
});
