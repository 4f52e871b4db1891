import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { ESLint } from 'eslint';
import { filesUnder, projectRoot as root } from '../helpers/files.js';

const code = ['src', 'rest', 'realtime', 'workers'].flatMap((folder) => filesUnder(path.join(root, folder), '.ts')).map((file) => readFileSync(file, 'utf8'));

/** True when some file declares `class Name` with a method (or getter, or field) `member` in it. */
function exists(className: string, member: string): boolean {
  const declaresClass = new RegExp(`\\bclass ${className}\\b`);
  const declaresMember = new RegExp(`^\\s+(?:(?:public|private|protected|readonly|static|async|get|set)\\s+)*${member}\\s*[(<=:]`, 'm');
  return code.some((text) => declaresClass.test(text) && declaresMember.test(text.slice(text.search(declaresClass))));
}

describe('ARCHITECTURE.md stays true', () => {
  const page = readFileSync(path.join(root, 'ARCHITECTURE.md'), 'utf8');
  const names = [...page.matchAll(/`([A-Z][A-Za-z]+)\.([a-z][A-Za-z]+)`/g)].map((match) => [match[1]!, match[2]!] as const).filter(([name]) => name !== 'Class');
  const files = [...page.matchAll(/`([a-z][\w.-]*\/[\w./-]*)`/g)].map((match) => match[1]!).filter((file) => !/[<*]/.test(file));

  it('every Class.method it names exists in the code', () => {
    assert.ok(names.length >= 15, `only ${names.length} names found: the scan is broken`);
    assert.deepEqual(names.filter(([name, member]) => !exists(name, member)).map(([name, member]) => `${name}.${member}`), []);
  });

  it('every file and folder it names exists', () => {
    assert.ok(files.length >= 10, `only ${files.length} paths found: the scan is broken`);
    assert.deepEqual(files.filter((file) => !existsSync(path.join(root, file))), []);
  });

  it('the messages area is split by action: no service file of it over 250 lines', () => {
    const services = filesUnder(path.join(root, 'src', 'messages'), '.service.ts');
    assert.ok(services.length >= 4, `only ${services.length} service files found: the scan is broken`);
    const long = services.map((file) => [path.relative(root, file), readFileSync(file, 'utf8').split('\n').length] as const).filter(([, lines]) => lines > 250);
    assert.deepEqual(long.map(([file, lines]) => `${file}: ${lines} lines`), []);
  });

  it('the check sees a name that is gone (positive control)', () => {
    assert.equal(exists('RoomActivityRepo', 'append'), true);
    assert.equal(exists('RoomActivityRepo', 'nextSeq'), false);
    assert.equal(exists('Ledger', 'postAll'), true);
    assert.equal(exists('NoSuchClass', 'post'), false);
  });
});

describe('no repository crosses an area in the wiring (the lint rule in eslint.config.mjs)', () => {
  const eslint = new ESLint({ cwd: root });
  /** The messages of the rules that keep repositories inside their area, for `text` placed at `file`. */
  const refusals = async (file: string, text: string) => {
    const [result] = await eslint.lintText(text, { filePath: path.join(root, file) });
    return result!.messages.filter((message) => /repositor/.test(message.message)).map((message) => message.line);
  };

  it('the wiring as it stands hands over no repository', async () => {
    const wiring = [path.join(root, 'src', 'composition.ts'), ...filesUnder(path.join(root, 'src'), 'index.ts').filter((file) => path.dirname(path.dirname(file)) === path.join(root, 'src'))];
    assert.ok(wiring.length >= 15, `only ${wiring.length} files found: the scan is broken`);
    const found = await Promise.all(wiring.map(async (file) => [path.relative(root, file), await refusals(path.relative(root, file), readFileSync(file, 'utf8'))] as const));
    assert.deepEqual(found.filter(([, lines]) => lines.length > 0), []);
  });

  it('sees a repository handed to another area, taken by a factory, or imported (positive controls)', async () => {
    assert.deepEqual(await refusals('src/composition.ts', 'declare const users: { repos: { users: object } };\nexport const x = { users: users.repos.users };\n'), [2]);
    assert.deepEqual(await refusals('src/calls/index.ts', 'export function f(deps: { rooms: { repos: { rooms: object } } }) {\n  return deps.rooms.repos;\n}\n'), [2]);
    assert.deepEqual(await refusals('src/moderation/index.ts', "import type { AppsArea } from '../apps/index.js';\nexport type X = Pick<AppsArea, 'repos' | 'policy'>;\n"), [2]);
    assert.deepEqual(await refusals('src/auth/auth.service.ts', "import type { UsersRepo } from '../users/index.js';\nexport type X = UsersRepo;\n"), [1]);
    // An area's own repositories stay its own.
    assert.deepEqual(await refusals('src/users/index.ts', "import type { UsersRepo } from './users.repo.js';\nexport const f = (repos: { users: UsersRepo }) => repos.users;\n"), []);
  });
});

/** The areas each area imports (from any of its files, type-only imports included), by folder of src/. */
function areaGraph(): Map<string, Set<string>> {
  const src = path.join(root, 'src');
  const graph = new Map<string, Set<string>>();
  for (const file of filesUnder(src, '.ts')) {
    const area = path.relative(src, file).split(path.sep)[0]!;
    if (area.endsWith('.ts') || area === 'platform') continue;
    const imports = graph.get(area) ?? new Set<string>();
    graph.set(area, imports);
    for (const [, target] of readFileSync(file, 'utf8').matchAll(/from '(\.{1,2}\/[^']+)'/g)) {
      const other = path.relative(src, path.resolve(path.dirname(file), target!)).split(path.sep)[0]!;
      if (other !== area && other !== 'platform' && !other.startsWith('..') && !other.endsWith('.js')) imports.add(other);
    }
  }
  return graph;
}

/** A cycle of areas each importing the next, or null: an area depends on the areas below it, never back. */
function cycleOf(graph: Map<string, Set<string>>): string[] | null {
  const done = new Set<string>();
  const visit = (area: string, trail: string[]): string[] | null => {
    if (trail.includes(area)) return [...trail.slice(trail.indexOf(area)), area];
    if (done.has(area)) return null;
    for (const next of graph.get(area) ?? []) {
      const cycle = visit(next, [...trail, area]);
      if (cycle) return cycle;
    }
    done.add(area);
    return null;
  };
  for (const area of graph.keys()) {
    const cycle = visit(area, []);
    if (cycle) return cycle;
  }
  return null;
}

describe('areas are layered: an area depends on the areas below it, never back (ARCHITECTURE.md)', () => {
  it('no two areas import each other, directly or round a cycle', () => {
    const graph = areaGraph();
    assert.ok(graph.size >= 15 && (graph.get('messages')?.has('rooms') ?? false), 'the scan is broken');
    assert.equal(cycleOf(graph)?.join(' → ') ?? null, null);
  });

  it('sees a cycle (positive control)', () => {
    const graph = new Map([['rooms', new Set(['users', 'messages'])], ['messages', new Set(['rooms'])], ['users', new Set<string>()]]);
    assert.deepEqual(cycleOf(graph), ['rooms', 'messages', 'rooms']);
  });
});
