// `npm run docs:tables`: writes every generated table of docs/ (errors, configuration, device events) from the code (dist/, built first).
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { GENERATED_TABLES, withTable } from '../dist/src/doc-tables.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
for (const table of GENERATED_TABLES) {
  const file = path.join(root, table.file);
  const text = readFileSync(file, 'utf8');
  const next = withTable(text, table);
  writeFileSync(file, next);
  process.stdout.write(`${table.file}: ${table.what} ${next === text ? 'already current' : 'written'}\n`);
}
