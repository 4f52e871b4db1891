// What the browser examples share: their script bundled for browsers, and their page and that bundle
// served from memory on loopback.
import { build } from 'esbuild';
import http from 'node:http';

/** `entry` bundled for browsers (ES modules, no Node built-ins), with esbuild `options` on top. */
export async function bundleForBrowsers(entry, options = {}) {
  const result = await build({ entryPoints: [entry], bundle: true, format: 'esm', platform: 'browser', target: 'chrome110', write: false, logLevel: 'error', ...options });
  return result.outputFiles[0].contents;
}

/** Serves `page` (HTML) at `/` and `bundle` (JavaScript) at `/<bundleName>`; everything else is 404. */
export async function servePage({ page, bundle, bundleName, port = 0, host = '127.0.0.1' }) {
  const server = http.createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://x');
    if (url.pathname === '/' || url.pathname === '/index.html') response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(page);
    else if (url.pathname === `/${bundleName}`) response.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8' }).end(bundle);
    else response.writeHead(404).end();
  });
  await new Promise((resolve) => server.listen(port, host, resolve));
  const { port: bound } = server.address();
  return { url: `http://${host}:${bound}/`, close: () => new Promise((resolve) => server.close(resolve)) };
}
