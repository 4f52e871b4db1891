import type { IncomingMessage, ServerResponse } from 'node:http';
import type { InvocationBody, PaymentEventBody, Reply, WebhookBody } from './types.js';
import { MemoryReplayStore, verifyWebhook, type ReplayStore } from './verify.js';

const MAX_BODY = 1024 * 1024;

/**
 * A Node.js request handler for an app's webhook: reads the raw body, verifies the call (refusing
 * with 401 what does not verify), answers pings with pong, and hands invocations and payment events
 * to the app's functions, whose replies it sends as JSON.
 */
export function webhookHandler(app: {
  /** The webhook secret(s): during a rotation, both. A function, so a rotated secret can be swapped in. */
  secrets: () => string | string[];
  onInvocation: (body: InvocationBody) => Promise<Reply> | Reply;
  onPaymentEvent?: (body: PaymentEventBody) => Promise<Reply | null> | Reply | null;
  replayStore?: ReplayStore;
}) {
  const replayStore = app.replayStore ?? new MemoryReplayStore();
  return (req: IncomingMessage, res: ServerResponse): void => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_BODY) chunks.push(chunk);
    });
    req.on('end', () => {
      void (async () => {
        const raw = Buffer.concat(chunks);
        const verified = await verifyWebhook({ secrets: app.secrets(), headers: req.headers, rawBody: raw, replayStore });
        if (!verified.ok) {
          res.writeHead(401, { 'content-type': 'application/json' }).end(JSON.stringify({ error: verified.reason }));
          return;
        }
        const body = JSON.parse(raw.toString('utf8')) as WebhookBody;
        let reply: Reply | null;
        if (body.type === 'ping') reply = { type: 'pong' };
        else if (body.type === 'invocation') reply = await app.onInvocation(body);
        else reply = (await app.onPaymentEvent?.(body)) ?? null;
        if (reply === null) res.writeHead(204).end();
        else res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(reply));
      })().catch(() => {
        if (!res.headersSent) res.writeHead(500).end();
      });
    });
  };
}
