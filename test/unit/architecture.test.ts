import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
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

/** The project's import graph and its cycle finder (scripts/import-cycles.mjs, which `npm run lint` runs on files). */
const { importGraph, cycles } = (await import(pathToFileURL(path.join(root, 'scripts', 'import-cycles.mjs')).href)) as {
  importGraph(files: string[]): Map<string, string[]>;
  cycles(graph: Map<string, string[]>): string[][];
};

/** The areas each area imports (from any of its files, type-only imports and re-exports included), by folder of src/. */
function areaGraph(): Map<string, string[]> {
  const src = path.join(root, 'src');
  /** The area a file of src/ belongs to; null for the platform and the files at src/'s top. */
  const areaOf = (file: string) => {
    const [first, ...rest] = path.relative(src, file).split(path.sep);
    return first && rest.length > 0 && first !== 'platform' && first !== '..' ? first : null;
  };
  const graph = new Map<string, Set<string>>();
  for (const [file, imports] of importGraph(filesUnder(src, '.ts'))) {
    const area = areaOf(file);
    if (!area) continue;
    const others = graph.get(area) ?? new Set<string>();
    graph.set(area, others);
    for (const imported of imports) {
      const other = areaOf(imported);
      if (other && other !== area) others.add(other);
    }
  }
  return new Map([...graph].map(([area, others]) => [area, [...others]]));
}

describe('areas are layered: an area depends on the areas below it, never back (ARCHITECTURE.md)', () => {
  it('no two areas import each other, directly or round a cycle', () => {
    const graph = areaGraph();
    assert.ok(graph.size >= 15 && (graph.get('messages')?.includes('rooms') ?? false), 'the scan is broken');
    assert.deepEqual(cycles(graph), []);
  });

  it('sees a cycle (positive control)', () => {
    const graph = new Map([['rooms', ['users', 'messages']], ['messages', ['rooms']], ['users', []]]);
    assert.deepEqual(cycles(graph), [['messages', 'rooms']]);
  });
});
