// `npm run docs:errors`: writes the README's error table from the error catalogue (dist/, built first).
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ERROR_TABLE_MARKERS, errorTableMarkdown } from '../dist/src/error-catalogue.js';

const readme = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'README.md');
const text = readFileSync(readme, 'utf8');
const start = text.indexOf(ERROR_TABLE_MARKERS.start);
const end = text.indexOf(ERROR_TABLE_MARKERS.end);
if (start < 0 || end < start) throw new Error('README.md has no error-table markers');
const next = `${text.slice(0, start + ERROR_TABLE_MARKERS.start.length)}\n${errorTableMarkdown()}\n${text.slice(end)}`;
writeFileSync(readme, next);
process.stdout.write(next === text ? 'README error table already current\n' : 'README error table written\n');
