// Lint: no import cycle between the project's TypeScript files. Every import counts, `import type` and
// `export … from` included (a cycle of types still ties the areas into one knot). Each cycle found is
// printed as the files it runs through, one strongly connected set at a time; exits 1 when there is any.
// `npm run lint` and `npm test` run it after ESLint.
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SKIP = new Set(['node_modules', 'dist', '.data', '.git', 'coverage']);

function sources(dir, found = []) {
  for (const entry of readdirSync(dir)) {
    if (SKIP.has(entry) || entry.startsWith('.')) continue;
    const full = path.join(dir, entry);
    if (statSync(full).isDirectory()) sources(full, found);
    else if (/\.(ts|mts)$/.test(entry) && !entry.endsWith('.d.ts')) found.push(full);
  }
  return found;
}

/** The file a relative specifier names (`./x.js` is `./x.ts`, a folder its `index.ts`), or undefined. */
function resolve(from, specifier) {
  if (!specifier.startsWith('.')) return undefined;
  const base = path.resolve(path.dirname(from), specifier);
  const stem = base.replace(/\.(m?js)$/, '');
  for (const candidate of [`${stem}.ts`, `${stem}.mts`, path.join(base, 'index.ts')]) if (existsSync(candidate)) return candidate;
  return undefined;
}

/** Every file's imports, as files. */
export function importGraph(files = sources(root)) {
  const graph = new Map();
  for (const file of files) {
    const info = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
    graph.set(file, [...new Set(info.importedFiles.map((ref) => resolve(file, ref.fileName)).filter(Boolean))]);
  }
  return graph;
}

/** The strongly connected sets of more than one file (Tarjan), each a cycle or several. */
export function cycles(graph) {
  let index = 0;
  const stack = [];
  const meta = new Map();
  const found = [];
  const visit = (node) => {
    meta.set(node, { index, low: index, onStack: true });
    index++;
    stack.push(node);
    for (const next of graph.get(node) ?? []) {
      if (!graph.has(next)) continue;
      if (!meta.has(next)) {
        visit(next);
        meta.get(node).low = Math.min(meta.get(node).low, meta.get(next).low);
      } else if (meta.get(next).onStack) meta.get(node).low = Math.min(meta.get(node).low, meta.get(next).index);
    }
    if (meta.get(node).low === meta.get(node).index) {
      const set = [];
      let member;
      do {
        member = stack.pop();
        meta.get(member).onStack = false;
        set.push(member);
      } while (member !== node);
      if (set.length > 1 || (graph.get(node) ?? []).includes(node)) found.push(set.sort());
    }
  };
  for (const node of graph.keys()) if (!meta.has(node)) visit(node);
  return found;
}

/** One concrete loop inside a strongly connected set, to show where to cut it. */
function oneLoop(graph, set) {
  const inSet = new Set(set);
  const start = set[0];
  const parent = new Map([[start, null]]);
  const queue = [start];
  while (queue.length) {
    const node = queue.shift();
    for (const next of graph.get(node) ?? []) {
      if (!inSet.has(next)) continue;
      if (next === start) {
        const loop = [start];
        for (let at = node; at !== start; at = parent.get(at)) loop.splice(1, 0, at);
        return [...loop, start];
      }
      if (!parent.has(next)) {
        parent.set(next, node);
        queue.push(next);
      }
    }
  }
  return set;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const graph = importGraph();
  const found = cycles(graph);
  const rel = (file) => path.relative(root, file);
  for (const set of found) {
    process.stderr.write(`import cycle through ${set.length} files: ${set.map(rel).join(', ')}\n  for example: ${oneLoop(graph, set).map(rel).join(' -> ')}\n`);
  }
  if (found.length) process.exit(1);
  process.stdout.write(`no import cycle in ${graph.size} files\n`);
}
