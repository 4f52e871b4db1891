import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { errorCatalogue } from '../../src/error-catalogue.js';
import { defineErrors } from '../../src/platform/errors.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

describe('error catalogue', () => {
  it('loads every errors file of every area (a new area adds its line to src/error-catalogue.ts)', () => {
    const loader = readFileSync(path.join(root, 'src', 'error-catalogue.ts'), 'utf8');
    const files = readdirSync(path.join(root, 'src'), { recursive: true, encoding: 'utf8' }).filter((file) => file.endsWith('.errors.ts'));
    assert.ok(files.length >= 15);
    for (const file of files) assert.ok(loader.includes(`import './${file.replaceAll(path.sep, '/').replace(/\.ts$/, '.js')}';`), `src/error-catalogue.ts does not import ${file}`);
  });

  it('declares each code once, upper-snake, with a 4xx or 5xx status and a message', () => {
    const codes = errorCatalogue();
    assert.ok(codes.length > 50);
    for (const error of codes) {
      assert.match(error.code, /^[A-Z][A-Z0-9_]+$/);
      assert.ok(error.status >= 400 && error.status < 600, error.code);
      assert.ok(error.message.length > 0, error.code);
    }
    assert.throws(() => defineErrors('elsewhere', { ROOM_NOT_FOUND: { status: 404, message: 'again' } }), /declared by rooms and again by elsewhere/);
  });

  it('a declared error carries its status, code, message and Retry-After', () => {
    const tooMany = errorCatalogue().find((error) => error.code === 'TOO_MANY_CODES')!;
    const made = tooMany({ retryAfter: 12.2 });
    assert.deepEqual([made.status, made.code, made.message, made.headers], [429, 'TOO_MANY_CODES', tooMany.message, { 'retry-after': '13' }]);
  });
});
