// Serves the calls example: index.html and calls.js bundled (with mediasoup-client and
// socket.io-client) by esbuild, in memory. `node examples/calls/serve.mjs [port]` prints the page's
// address; open it with ?api=…&hub=…&token=…[&room=…] (examples/calls/index.html). The browser test
// serves it the same way.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleForBrowsers, servePage } from '../serve-page.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));

/** Bundles the page's script for browsers (ES modules, no Node built-ins). */
export function bundleCallsExample() {
  return bundleForBrowsers(path.join(here, 'calls.js'), { define: { 'process.env.NODE_ENV': '"production"', 'process.env.DEBUG': 'undefined' } });
}

export async function serveCallsExample({ port = 0, host = '127.0.0.1' } = {}) {
  const bundle = await bundleCallsExample();
  const page = readFileSync(path.join(here, 'index.html'));
  return servePage({ page, bundle, bundleName: 'calls.bundle.js', port, host });
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { url } = await serveCallsExample({ port: Number(process.argv[2] ?? 8090) });
  process.stdout.write(`calls example on ${url}\nOpen ${url}?api=http://127.0.0.1:8080&hub=http://127.0.0.1:8081&token=<access token>[&room=<roomId>]\n(the api needs CORS_ORIGINS=${url.replace(/\/$/, '')})\n`);
}
