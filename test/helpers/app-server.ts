import http, { type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedCall {
  headers: IncomingHttpHeaders;
  /** The body exactly as received, before any parsing (what the signature covers). */
  raw: Buffer;
  /** When it arrived (ms since 1970). */
  at: number;
}

export interface AppServer {
  url: string;
  port: number;
  calls: ReceivedCall[];
  close(): Promise<void>;
}

/**
 * A third-party app's webhook server, as the tests need one per behaviour: real HTTP on 127.0.0.1,
 * recording every call it receives and answering with `respond`.
 */
export async function startAppServer(respond: (call: ReceivedCall, res: ServerResponse) => void | Promise<void>): Promise<AppServer> {
  const calls: ReceivedCall[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const call = { headers: req.headers, raw: Buffer.concat(chunks), at: Date.now() };
      calls.push(call);
      void Promise.resolve(respond(call, res)).catch(() => res.destroy());
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/webhook`,
    port,
    calls,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Answers a JSON reply. */
export function json(res: ServerResponse, body: unknown, status = 200): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(text);
}
