import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { GENERATED_TABLES, withTable } from '../../src/doc-tables.js';
import { configTableMarkdown } from '../../src/platform/config.js';
import { filesUnder, projectRoot as root } from '../helpers/files.js';

const PAGES = [path.join(root, 'README.md'), path.join(root, 'ARCHITECTURE.md'), path.join(root, 'bench', 'RESULTS.md'), ...filesUnder(path.join(root, 'docs'), '.md')];

/** Text outside fenced code blocks (links and headings there are not links and headings). */
const outsideCode = (text: string) => text.replace(/^```[\s\S]*?^```/gm, '');

/** The anchors a page's headings make, as GitHub makes them (repeated headings get -1, -2, …). */
function anchorsOf(text: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const match of outsideCode(text).matchAll(/^#{1,6} (.+)$/gm)) {
    const base = match[1]!.trim().toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/ /g, '-');
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  return anchors;
}

describe('the docs', () => {
  it('every link between the pages, and to files of the tree, arrives (file and heading)', () => {
    const broken: string[] = [];
    let checked = 0;
    for (const page of PAGES) {
      const text = readFileSync(page, 'utf8');
      for (const match of outsideCode(text).matchAll(/\[[^\]]*\]\(([^)\s]+)\)/g)) {
        const href = match[1]!;
        if (/^[a-z]+:/.test(href)) continue;
        checked++;
        const [file, anchor] = href.split('#') as [string, string | undefined];
        const target = file === '' ? page : path.resolve(path.dirname(page), decodeURIComponent(file));
        const where = `${path.relative(root, page)}: ${href}`;
        if (!existsSync(target)) {
          broken.push(`${where} (no such file)`);
          continue;
        }
        if (anchor && !anchorsOf(readFileSync(target, 'utf8')).has(anchor)) broken.push(`${where} (no such heading)`);
      }
    }
    assert.ok(checked > 50, `only ${checked} links checked: the scan is broken`);
    assert.deepEqual(broken, []);
  });

  it('the check sees a broken link (positive control)', () => {
    assert.ok(anchorsOf('# Sign-in\n## Sign-in abuse\n## `geoLocation`\n## Sign-in abuse').has('sign-in-abuse-1'));
    assert.ok(anchorsOf('## `geoLocation`').has('geolocation'));
    assert.ok(!anchorsOf('```\n# not a heading\n```').has('not-a-heading'));
  });

  it('the README is a first screen and a map: under 15 KB, its two commands first, every docs page linked from docs/README.md', () => {
    const readme = readFileSync(path.join(root, 'README.md'), 'utf8');
    assert.ok(Buffer.byteLength(readme) < 15_000, `README.md is ${Buffer.byteLength(readme)} bytes`);
    const firstBlock = /```sh\n([\s\S]*?)```/.exec(readme)?.[1] ?? '';
    assert.deepEqual(firstBlock.trim().split('\n').map((line) => line.split(/\s+#/)[0]!.trim()), ['npm start', 'npm test']);
    const index = readFileSync(path.join(root, 'docs', 'README.md'), 'utf8');
    for (const page of filesUnder(path.join(root, 'docs'), '.md')) {
      const relative = path.relative(path.join(root, 'docs'), page);
      if (relative !== 'README.md') assert.ok(index.includes(`](${relative})`), `docs/README.md does not link ${relative}`);
    }
  });

  it('every generated table is the one the code makes (npm run docs:tables writes them)', () => {
    for (const table of GENERATED_TABLES) {
      const text = readFileSync(path.join(root, table.file), 'utf8');
      assert.equal(withTable(text, table), text, `${table.file}: the ${table.what} differs from the code; run npm run docs:tables`);
    }
    assert.match(configTableMarkdown(), /\| `JWT_SECRET` \| — \| required \|/);
    assert.match(configTableMarkdown(), /\| `SOCKET_TRANSPORTS` \| `websocket` \| {2}\|/);
  });
});
