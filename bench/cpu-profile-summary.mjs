// `node bench/cpu-profile-summary.mjs <file.cpuprofile> [top] [from-to]`: where a role's CPU went, by
// package (node_modules/<name>), by file of ours (dist/…) or by Node internal, as shares of the
// samples. `from-to` (seconds since the profile began, say `31-39`) keeps one phase of a bench;
// `timeline` in its place prints each second's busy share, to find the phases.
import { readFileSync } from 'node:fs';

const [file, top = '25', window] = process.argv.slice(2);
if (!file) {
  process.stderr.write('usage: node bench/cpu-profile-summary.mjs <file.cpuprofile> [top] [from-to | timeline]\n');
  process.exit(2);
}
const profile = JSON.parse(readFileSync(file, 'utf8'));
const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
const idleIds = new Set(profile.nodes.filter((node) => node.callFrame.functionName === '(idle)').map((node) => node.id));
const [from, to] = window && window !== 'timeline' ? window.split('-').map((s) => Number(s) * 1e6) : [0, Infinity];
const timeOf = new Map();
const seconds = [];
let at = 0;
profile.samples.forEach((id, i) => {
  const us = profile.timeDeltas[i] ?? 0;
  at += us;
  const second = Math.floor(at / 1e6);
  seconds[second] ??= { busy: 0, all: 0 };
  seconds[second].all += us;
  if (!idleIds.has(id)) seconds[second].busy += us;
  if (at >= from && at < to) timeOf.set(id, (timeOf.get(id) ?? 0) + us);
});
if (window === 'timeline') {
  seconds.forEach((s, i) => s && process.stdout.write(`${String(i).padStart(4)} s  ${((100 * s.busy) / s.all).toFixed(0).padStart(3)}% busy\n`));
  process.exit(0);
}

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
