import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository's root (test files run from dist/test/…; the sources they read stay in the tree). */
export const projectRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

/** Every file under `dir` whose name ends with `ending`, recursively. */
export function filesUnder(dir: string, ending: string, found: string[] = []): string[] {
  for (const entry of readdirSync(dir)) {
    const full = path.join(dir, entry);
    if (statSync(full).isDirectory()) filesUnder(full, ending, found);
    else if (entry.endsWith(ending)) found.push(full);
  }
  return found;
}
