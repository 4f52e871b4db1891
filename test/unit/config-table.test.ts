import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { CONFIG_TABLE_MARKERS, configTableMarkdown } from '../../src/platform/config.js';

const readme = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../README.md');

describe("the README's configuration table", () => {
  it('is the one the configuration schema makes (npm run docs:config writes it)', () => {
    const text = readFileSync(readme, 'utf8');
    const start = text.indexOf(CONFIG_TABLE_MARKERS.start);
    const end = text.indexOf(CONFIG_TABLE_MARKERS.end);
    assert.ok(start >= 0 && end > start, 'README.md has no configuration-table markers');
    assert.equal(text.slice(start + CONFIG_TABLE_MARKERS.start.length, end).trim(), configTableMarkdown().trim());
    assert.match(configTableMarkdown(), /\| `JWT_SECRET` \| — \| required \|/);
    assert.match(configTableMarkdown(), /\| `SOCKET_TRANSPORTS` \| `websocket` \| {2}\|/);
  });
});
