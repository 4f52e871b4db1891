import { createHmac, timingSafeEqual } from 'node:crypto';
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

/**
 * What an app does with each call, coded from the spec's four steps ("Authentication", 4): the HMAC
 * over `<timestamp>.<raw body>` equals one of the `v1=` values (constant time), the timestamp is
 * within 300 seconds of now, and the delivery id was not accepted in the last 10 minutes.
 */
export function verifyAsAnApp(secret: string, call: ReceivedCall, nowSeconds: number, accepted: Set<string>): boolean {
  const timestamp = String(call.headers['x-service-timestamp']);
  const expected = Buffer.from(createHmac('sha256', secret).update(`${timestamp}.`).update(call.raw).digest('hex'));
  const values = String(call.headers['x-service-signature'])
    .split(',')
    .map((v) => v.trim())
    .filter((v) => v.startsWith('v1='))
    .map((v) => Buffer.from(v.slice(3)));
  if (!values.some((v) => v.length === expected.length && timingSafeEqual(v, expected))) return false;
  if (Math.abs(nowSeconds - Number(timestamp)) > 300) return false;
  const delivery = String(call.headers['x-service-delivery']);
  if (accepted.has(delivery)) return false;
  accepted.add(delivery);
  return true;
}
