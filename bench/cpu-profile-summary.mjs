// `node bench/cpu-profile-summary.mjs <file.cpuprofile> [top]`: where a role's CPU went, by package
// (node_modules/<name>), by file of ours (dist/…) or by Node internal, as shares of the samples.
import { readFileSync } from 'node:fs';

const [file, top = '25'] = process.argv.slice(2);
if (!file) {
  process.stderr.write('usage: node bench/cpu-profile-summary.mjs <file.cpuprofile> [top]\n');
  process.exit(2);
}
const profile = JSON.parse(readFileSync(file, 'utf8'));
const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
const timeOf = new Map();
profile.samples.forEach((id, i) => timeOf.set(id, (timeOf.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));

function place(callFrame) {
  const url = callFrame.url ?? '';
  if (url.includes('node_modules/')) {
    const parts = url.split('node_modules/').pop().split('/');
    return parts[0].startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0];
  }
  if (url.includes('/dist/')) return `ours: ${url.split('/dist/')[1]}`;
  if (url.startsWith('node:')) return url;
  return callFrame.functionName ? `(${callFrame.functionName})` : '(native)';
}

let total = 0;
const byPlace = new Map();
for (const [id, us] of timeOf) {
  total += us;
  const key = place(nodes.get(id).callFrame);
  byPlace.set(key, (byPlace.get(key) ?? 0) + us);
}
for (const [key, us] of [...byPlace].sort((a, b) => b[1] - a[1]).slice(0, Number(top))) {
  process.stdout.write(`${((100 * us) / total).toFixed(1).padStart(5)}%  ${key}\n`);
}
