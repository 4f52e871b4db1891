// Writes a generated table into README.md between its two markers (the error and configuration tables).
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const readme = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'README.md');

export function writeReadmeTable(markers, markdown, what) {
  const text = readFileSync(readme, 'utf8');
  const start = text.indexOf(markers.start);
  const end = text.indexOf(markers.end);
  if (start < 0 || end < start) throw new Error(`README.md has no ${what} markers`);
  const next = `${text.slice(0, start + markers.start.length)}\n${markdown}\n${text.slice(end)}`;
  writeFileSync(readme, next);
  process.stdout.write(next === text ? `README ${what} already current\n` : `README ${what} written\n`);
}
