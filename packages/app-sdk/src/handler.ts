import type { IncomingMessage, ServerResponse } from 'node:http';
import type { InvocationBody, PaymentEventBody, Reply, WebhookBody } from './types.js';
import { MemoryReplayStore, REPLAY_TTL_SECONDS, verifyWebhook, type ReplayStore } from './verify.js';

const MAX_BODY = 1024 * 1024;

/** How long a handler may hold a delivery before another try may take it. */
const LEASE_SECONDS = 60;
/** How long a duplicate waits for the first try of its delivery to end. */
const WAIT_FOR_FIRST_MS = 10_000;

/**
 * A Node.js request handler for an app's webhook: reads the raw body, verifies the call (refusing
 * with 401 what does not verify), answers pings with pong, and hands invocations and payment events
 * to the app's functions, whose replies it sends as JSON. Each delivery is handled once: its id is
 * recorded as handled only after the app's function succeeded; a function that throws answers 500,
 * so the service tries again and that try is handled; a copy of a delivery being handled waits for
 * it, and a copy of one already handled is answered 204 without calling the app again.
 */
type InvocationFn = (body: InvocationBody) => Promise<Reply> | Reply;

export function webhookHandler(app: {
  /** The webhook secret(s): during a rotation, both. A function, so a rotated secret can be swapped in. */
  secrets: () => string | string[];
  /**
   * Handlers by what was invoked, as Slack's Bolt routes them: a flow's steps by the flow's id, a
   * command by its id, a card button by the button's id. What none of them takes goes to `onInvocation`.
   */
  flows?: Record<string, InvocationFn>;
  commands?: Record<string, InvocationFn>;
  actions?: Record<string, InvocationFn>;
  onInvocation?: InvocationFn;
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
        const verified = await verifyWebhook({ secrets: app.secrets(), headers: req.headers, rawBody: raw });
        if (!verified.ok) {
          res.writeHead(401, { 'content-type': 'application/json' }).end(JSON.stringify({ error: verified.reason }));
          return;
        }
        const body = JSON.parse(raw.toString('utf8')) as WebhookBody;
        if (body.type === 'ping') {
          res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ type: 'pong' }));
          return;
        }
        const taken = await take(replayStore, verified.deliveryId);
        if (taken !== 'NEW') {
          res.writeHead(taken === 'HANDLED' ? 204 : 409).end();
          return;
        }
        let reply: Reply | null;
        try {
          reply = body.type === 'invocation' ? await routed(app, body) : ((await app.onPaymentEvent?.(body)) ?? null);
        } catch (error) {
          await replayStore.abandon(verified.deliveryId);
          throw error;
        }
        await replayStore.finish(verified.deliveryId, REPLAY_TTL_SECONDS);
        if (reply === null) res.writeHead(204).end();
        else res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(reply));
      })().catch(() => {
        if (!res.headersSent) res.writeHead(500).end();
      });
    });
  };
}

/** The handler of an invocation: its flow's, its command's, its button's, or the catch-all; an error reply when none. */
function routed(app: { flows?: Record<string, InvocationFn>; commands?: Record<string, InvocationFn>; actions?: Record<string, InvocationFn>; onInvocation?: InvocationFn }, body: InvocationBody): Promise<Reply> | Reply {
  const handler = (body.flow !== null ? app.flows?.[body.flow] : undefined) ?? (body.command !== null ? app.commands?.[body.command] : undefined) ?? (body.action ? app.actions?.[body.action.id] : undefined) ?? app.onInvocation;
  return handler ? handler(body) : { type: 'error', userMessage: 'This app cannot do that yet', code: 'NOT_HANDLED' };
}

/** Takes the delivery, waiting while another try of it runs: NEW, HANDLED, or BUSY after the wait. */
async function take(store: ReplayStore, deliveryId: string): Promise<'NEW' | 'HANDLED' | 'BUSY'> {
  const deadline = Date.now() + WAIT_FOR_FIRST_MS;
  for (;;) {
    const state = await store.begin(deliveryId, LEASE_SECONDS);
    if (state !== 'BUSY' || Date.now() > deadline) return state;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
