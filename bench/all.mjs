// `npm run bench`: runs the benchmarks one after another (each alone on the machine) and rewrites the
// summary table at the top of bench/RESULTS.md: the date, the commit, and each headline figure with
// its goal and whether it is met, so a regression shows the next time anyone runs it. `BENCHES=a,b`
// runs only those (the others' rows say "not run"); `BENCH_TIMEOUT_S` bounds each (default 1200 s).
import { execFileSync, spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const results = path.join(root, 'bench', 'RESULTS.md');
const TIMEOUT_MS = Number(process.env.BENCH_TIMEOUT_S ?? 1200) * 1000;
const START = '<!-- bench summary: written by `npm run bench` -->';
const END = '<!-- end of bench summary -->';

/** Each headline figure: the bench that prints it, where in its output, its unit and its goal. */
const FIGURES = [
  { bench: 'machine', name: 'this machine now: a bare Node HTTP server, req/s (bench:messages\' load generator)', pattern: /HTTP server, 32 in flight \| (\d+) req\/s/, unit: '/s', goal: null },
  { bench: 'startup', name: 'npm start → /readyz, median', pattern: /median ([\d.]+) s/, unit: 's', goal: ['<=', 5] },
  { bench: 'messages', name: 'REST post → 10,000 sockets over 2 hubs, p99', pattern: /REST post to a room of \d+ over 2 hub nodes\s*\| p50 [\d.]+ ms, p99 ([\d.]+) ms/, unit: 'ms', goal: ['<=', 150] },
  { bench: 'messages', name: 'posts/s, 32 in flight', pattern: /PUT \/api\/messages, \d+ in flight\s*\| (\d+) posts\/s/, unit: '/s', goal: ['>=', 3000] },
  { bench: 'messages', name: 'posts/s against the api\'s trivial route in the same run', pattern: /posts\/s, p50 [\d.]+ ms, p99 [\d.]+ ms, failures \d+; ([\d.]+)× the trivial route/, unit: '×', goal: null },
  { bench: 'messages', name: 'posts at a fixed 1,000/s, p99', pattern: /fixed 1,000 posts\/s\s*\| achieved \d+\/s, p50 [\d.]+ ms, p99 ([\d.]+) ms/, unit: 'ms', goal: ['<=', 50] },
  { bench: 'messages', name: 'push of one post to 9,000 offline devices', pattern: /pushes handed to the provider in ([\d.]+) s/, unit: 's', goal: ['<=', 10] },
  { bench: 'messages', name: 'thumbnails per second', pattern: /2 at a time\s*\| ([\d.]+) per second/, unit: '/s', goal: ['>=', 50] },
  { bench: 'realtime', name: 'echo per hub CPU-second, uWebSockets.js / ws', pattern: /echo ratio uWebSockets\.js \/ ws, per hub CPU-second\s*\| ([\d.]+)×/, unit: '×', goal: ['>=', 2] },
  { bench: 'wallets', name: 'transfers/s, 32 in flight', pattern: /([\d.]+) transfers\/s/, unit: '/s', goal: ['>=', 1000] },
  { bench: 'wallets', name: 'transfer p99', pattern: /transfers\/s, p50 [\d.]+ ms, p99 ([\d.]+) ms/, unit: 'ms', goal: ['<=', 50] },
  { bench: 'webhooks', name: 'webhook deliveries/s, burst', pattern: /burst of \d+: (\d+) deliveries\/s/, unit: '/s', goal: ['>=', 2000] },
  { bench: 'webhooks', name: 'webhook enqueue → arrival p99 at the paced rate', pattern: /enqueue to arrival p50 [\d.]+ ms, p99 ([\d.]+) ms/, unit: 'ms', goal: ['<=', 50] },
  { bench: 'webhooks', name: 'webhook deliveries that did not arrive', pattern: /(\d+) not delivered/, unit: '', goal: ['<=', 0] },
  { bench: 'peers', name: 'hub / best peer (soketi, socket.io on ws): CPU per delivery', pattern: /hub \/ best peer, CPU-ms per 1,000 deliveries: ([\d.]+)×/, unit: '×', goal: ['<', 1] },
  { bench: 'peers', name: 'hub / best peer: CPU per delivery net of idle upkeep', pattern: /hub \/ best peer, CPU-ms per 1,000 deliveries net of the idle connections' upkeep: ([\d.]+)×/, unit: '×', goal: ['<', 1] },
  { bench: 'peers', name: 'hub / best peer: RSS per idle connection', pattern: /hub \/ best peer, RSS per idle connection: ([\d.]+)×/, unit: '×', goal: ['<', 1] },
  { bench: 'peers', name: 'hub / best peer: fan-out p99, 10,000 subscribers', pattern: /hub \/ best peer, fan-out p99: ([\d.]+)×/, unit: '×', goal: ['<', 1] },
  { bench: 'scale', name: 'hub CPU per room broadcast received, 2 hubs, net of upkeep', pattern: /room broadcasts alone, 2 hub nodes[^\n]*net of upkeep ([\d.]+) µs/, unit: 'µs', goal: ['<=', 40] },
  { bench: 'scale', name: 'hub CPU per room broadcast received, 8 hubs, net of upkeep', pattern: /room broadcasts alone, 8 hub nodes[^\n]*net of upkeep ([\d.]+) µs/, unit: 'µs', goal: ['<=', 40] },
  { bench: 'scale', name: 'hub CPU per delivery, 8 hubs / 2 hubs', pattern: /8 hubs \/ 2 hubs \| ([\d.]+)×/, unit: '×', goal: ['<=', 1.25] },
  { bench: 'scale', name: 'hub holding no recipient / busy hub, net of upkeep', pattern: /net of upkeep ([\d.]+)%, [\d.]+% \(goal: under 5%\)/, unit: '%', goal: ['<', 5] },
  { bench: 'chat-status', name: 'chat status, first page of 100, p50', pattern: /first page of 100: p50 ([\d.]+) ms/, unit: 'ms', goal: null },
  { bench: 'pushes', name: 'push of one post to 9,000 offline devices, 2 workers (FCM adapter over HTTP)', pattern: /offline with tokens, \d+ live\), 2 workers, FCM adapter over HTTP \| \d+ pushes handed to the provider in ([\d.]+) s/, unit: 's', goal: ['<=', 10] },
  { bench: 'calls', name: 'room call of 3 browsers: joining to the first media byte, p50', pattern: /3 participants, \d+ forwarded streams: join to first media byte p50 (\d+) ms/, unit: 'ms', goal: null },
  { bench: 'calls', name: 'SFU worker CPU per forwarded stream, 3 browsers', pattern: /3 participants, \d+ forwarded streams:.*?\((\d+) µs\/s per stream\)/, unit: 'µs/s', goal: null },
  { bench: 'calls', name: 'SFU worker CPU per forwarded stream, 9 browsers', pattern: /9 participants, \d+ forwarded streams:.*?\((\d+) µs\/s per stream\)/, unit: 'µs/s', goal: null },
  { bench: 'post-cost', name: 'CPU per post of api + worker + hubs / the api\'s, 150 posts/s, rooms of 3, members online', pattern: /150 posts\/s, rooms of 3, members online\s*\|.*?service \(api \+ worker \+ hubs\) ([\d.]+)× the api's/, unit: '×', goal: ['<=', 2] },
  { bench: 'post-cost', name: 'npm start\'s shape, 150 posts/s: the whole stack\'s CPU, share of a core, from the first post', pattern: /npm start's shape[^|]*from its first post\s*\|.*?: (\d+)% of a core/, unit: '%', goal: ['<', 50] },
  { bench: 'post-cost', name: 'npm start\'s shape, 150 posts/s: the same, the next seconds', pattern: /npm start's shape[^|]*the next seconds\s*\|.*?: (\d+)% of a core/, unit: '%', goal: ['<', 50] },
  { bench: 'client', name: 'client library, minified and gzipped ESM (with openapi-fetch and socket.io-client)', pattern: /with openapi-fetch and socket\.io-client: [\d.]+ KB minified, ([\d.]+) KB gzipped/, unit: 'KB', goal: null },
  { bench: 'client', name: 'hub restarted in place: 200 library clients connected and caught up, p50 after the new hub was ready', pattern: /run 1:.*?from the new hub ready: p50 (\d+) ms/, unit: 'ms', goal: null },
  { bench: 'client', name: 'rolling restart behind nginx (2 hubs): 200 library clients on the other hub and caught up, p50 from the stop', pattern: /connected to the other hub and caught up, from the stop: p50 (\d+) ms/, unit: 'ms', goal: null },
  // The per-node figures of the capacity model (docs/operators/capacity.md), each from its bench's output.
  { bench: 'realtime', name: 'capacity: idle sockets per hub per GB of RSS', pattern: /after \d+ s idle: ([\d.]+) KB per socket/, derive: (kb) => Math.round(1e6 / kb), unit: '', goal: null },
  { bench: 'scale', name: 'capacity: deliveries per hub CPU-second (1 hub, rooms of 5, posts and device events)', pattern: /1 hub node, \d+ sockets \|[^|]*\| hub CPU [\d.]+ s in all: ([\d.]+) µs per delivery/, derive: (us) => Math.round(1e6 / us), unit: '', goal: null },
  { bench: 'messages', name: 'capacity: posts per api CPU-second (32 in flight)', pattern: /PUT \/api\/messages, \d+ in flight\s*\| (\d+) posts\/s.*?api CPU (\d+)%/, derive: (posts, cpu) => Math.round(posts / (cpu / 100)), unit: '', goal: null },
  { bench: 'post-cost', name: 'capacity: worker CPU per post that has pushes (rooms of 3, 1,000 posts/s, local provider)', pattern: /1000 posts\/s, rooms of 3, members offline with push tokens\s*\| CPU per post: api [\d.]+ ms, worker ([\d.]+) ms/, unit: 'ms', goal: null },
  { bench: 'webhooks', name: 'capacity: webhook deliveries per worker CPU-second', pattern: /capacity figure: (\d+) webhook deliveries per worker CPU-second/, unit: '', goal: null },
  { bench: 'pushes', name: 'capacity: pushes per worker CPU-second (FCM adapter, 1 worker)', pattern: /1 worker, FCM adapter over HTTP \| \d+ pushes[^|]*?: (\d+) pushes per worker CPU-second/, unit: '', goal: null },
];

const wanted = process.env.BENCHES ? new Set(process.env.BENCHES.split(',').map((name) => name.trim())) : null;
const benches = [...new Set(FIGURES.map((figure) => figure.bench))].filter((bench) => !wanted || wanted.has(bench));

/** Runs one bench script alone; its output (stdout and stderr), or why it gave none. */
function run(bench) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [path.join(root, 'bench', `${bench}.mjs`)], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk) => {
      output += chunk;
      process.stdout.write(chunk);
    });
    child.stderr.on('data', (chunk) => {
      output += chunk;
      process.stderr.write(chunk);
    });
    const timer = setTimeout(() => child.kill('SIGTERM'), TIMEOUT_MS);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ output, problem: code === 0 ? null : signal ? `stopped after ${TIMEOUT_MS / 1000} s` : `exited ${code}` });
    });
  });
}

const outputs = new Map();
for (const bench of benches) {
  process.stderr.write(`[bench] ${bench}\n`);
  outputs.set(bench, await run(bench));
}

const compare = { '>=': (a, b) => a >= b, '<=': (a, b) => a <= b, '<': (a, b) => a < b };
const met = (value, goal) => (goal === null ? '—' : compare[goal[0]](value, goal[1]) ? 'met' : 'not met');
const rows = FIGURES.map((figure) => {
  const ran = outputs.get(figure.bench);
  const goal = figure.goal ? `${{ '>=': '≥', '<=': '≤', '<': '<' }[figure.goal[0]]} ${figure.goal[1]}${figure.unit ? ` ${figure.unit}` : ''}` : '—';
  if (!ran) return `| ${figure.name} | not run | ${goal} | |`;
  const found = figure.pattern.exec(ran.output);
  // A bench says so when a figure cannot be read from this run (peers: a net of upkeep mostly subtraction).
  if (!found) return `| ${figure.name} | no figure (${ran.problem ?? (/not measurable/.test(ran.output) ? 'not measurable in this run: see its output' : 'not in its output')}) | ${goal} | not met |`;
  // A derived figure (the capacity model's) is computed from what the bench printed.
  const value = figure.derive ? figure.derive(...found.slice(1).map(Number)) : Number(found[1]);
  const shown = figure.derive ? String(value) : found[1];
  return `| ${figure.name} | ${shown}${figure.unit ? ` ${figure.unit}` : ''} | ${goal} | ${met(value, figure.goal)} |`;
});
const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root }).toString().trim();
const table = [
  START,
  `Last \`npm run bench\`: ${new Date().toISOString().slice(0, 10)}, commit ${commit}, ${benches.length} of ${new Set(FIGURES.map((f) => f.bench)).size} benches run (each alone).`,
  '',
  '| figure | result | goal | |',
  '|---|---|---|---|',
  ...rows,
  END,
].join('\n');

const text = readFileSync(results, 'utf8');
const at = text.indexOf(START);
const updated = at >= 0 ? text.slice(0, at) + table + text.slice(text.indexOf(END) + END.length) : text.replace(/\n\n/, `\n\n${table}\n\n`);
writeFileSync(results, updated);
process.stdout.write(`\n${table}\n`);
