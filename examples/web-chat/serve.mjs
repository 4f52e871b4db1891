// Serves the web chat example: index.html and chat.js bundled for browsers by esbuild, in memory, with
// the client library from this repository's sources (or, given `library`, from an installed package, as
// the browser test does with the packed tarball). `node examples/web-chat/serve.mjs [port]` prints the
// page's address; open it with ?api=<the service>; the api needs CORS_ORIGINS=<the page's origin>.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleForBrowsers, servePage } from '../serve-page.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const sources = path.join(here, '..', '..', 'packages', 'client', 'src', 'index.ts');

/** The page's script for browsers (ES modules), with `@chat-platform/client` from `library` (a file). */
export function bundleWebChat(library = sources) {
  return bundleForBrowsers(path.join(here, 'chat.js'), { alias: { '@chat-platform/client': library } });
}

export async function serveWebChat({ port = 0, host = '127.0.0.1', library } = {}) {
  const bundle = await bundleWebChat(library);
  const page = readFileSync(path.join(here, 'index.html'));
  return servePage({ page, bundle, bundleName: 'chat.bundle.js', port, host });
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { url } = await serveWebChat({ port: Number(process.argv[2] ?? 8091) });
  process.stdout.write(`web chat on ${url}\nOpen ${url}?api=http://127.0.0.1:8080&hub=http://127.0.0.1:8081 (npm start's api and hub; the api needs CORS_ORIGINS=${url.replace(/\/$/, '')})\n`);
}
