// What the browser examples share: their page and its bundled script served from memory on loopback.
import http from 'node:http';

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
