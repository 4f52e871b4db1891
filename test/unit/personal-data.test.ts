import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { PERSONAL_DATA } from '../../src/personal-data.js';

const src = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../src');

/** Every collection name the code opens (`db.collection('name')`), with the file that opens it. */
function collectionsInCode(): Map<string, string> {
  const found = new Map<string, string>();
  for (const entry of readdirSync(src, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || !entry.name.endsWith('.ts')) continue;
    const file = path.join(entry.parentPath, entry.name);
    for (const match of readFileSync(file, 'utf8').matchAll(/\.collection(?:<[^>]*>)?\('([a-z0-9_]+)'\)/g)) found.set(match[1]!, path.relative(src, file));
  }
  return found;
}

describe('the personal-data table (docs/reference/personal-data.md)', () => {
  it('declares every collection the code opens, once, by the area whose folder opens it', () => {
    const declared = PERSONAL_DATA.filter((entry) => entry.collection);
    const names = declared.map((entry) => entry.collection!);
    assert.deepEqual(names.filter((name, i) => names.indexOf(name) !== i), [], 'declared twice');
    const inCode = collectionsInCode();
    assert.ok(inCode.size >= 50, `the scan found ${inCode.size} collections`);
    const missing = [...inCode.keys()].filter((name) => !names.includes(name));
    assert.deepEqual(missing, [], 'collections the code opens that no area declares');
    assert.deepEqual(names.filter((name) => !inCode.has(name)), [], 'declared but never opened');
    for (const entry of declared) {
      const owner = inCode.get(entry.collection!)!.split(path.sep)[0];
      assert.equal(entry.area, owner?.endsWith('.ts') ? 'platform' : owner, `${entry.collection} is opened under src/${owner}`);
    }
  });

  it('the check sees a collection nobody declared (positive control)', () => {
    const names = new Set(PERSONAL_DATA.map((entry) => entry.collection));
    assert.ok(!names.has('not_a_collection'));
    assert.ok([...collectionsInCode().keys()].some((name) => names.has(name)));
  });
});
