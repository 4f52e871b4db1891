import type { IncomingMessage, ServerResponse } from 'node:http';
import type { InvocationBody, Manifest, PaymentEventBody, Reply, RoomEventBody, WebhookBody } from './types.js';
import { MemoryReplayStore, REPLAY_TTL_SECONDS, verifyWebhook, type ReplayStore } from './verify.js';

const MAX_BODY = 1024 * 1024;

/** How long a handler may hold a delivery before another try may take it. */
const LEASE_SECONDS = 60;
/** How long a duplicate waits for the first try of its delivery to end. */
const WAIT_FOR_FIRST_MS = 10_000;

/**
 * A Node.js request handler for an app's webhook: reads the raw body, verifies the call (refusing
 * with 401 what does not verify), answers pings with pong, and hands invocations and payment events
 * to the app's functions, whose replies it sends as JSON. Each call is handled once, by what its
 * signature covers (`replayKeyOf`: a payment event's id, another call's body), never by the unsigned
 * delivery header: recorded as handled only after the app's function succeeded; a copy of a call
 * being handled waits for it, and a copy of one already handled is answered 204 without calling the
 * app again. A function that throws is logged (or handed to `onError`) and forgotten, so a retry is
 * handled: an invocation is answered with a coded error reply (`HANDLER_FAILED`, the member sees
 * `failureMessage`), a payment event with 500 and a coded body, so the service tries it again.
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
  /** The app was added to a room or removed from one (answered 204 once this returns). */
  onRoomEvent?: (body: RoomEventBody) => Promise<void> | void;
  /**
   * The app's manifest, as uploaded: a command that opens a form (its `flow`) sends that form's steps
   * with `command` set and `flow` null (the specification's wire: `flow` is set only when a card's
   * `open_flow` button started the form), and with the manifest they go to `flows[<the command's flow>]`
   * when there is one. Without it they go to `commands[<command>]`.
   */
  manifest?: Pick<Manifest, 'commands'>;
  /** A function threw: told here (default: logged to stderr with the call's kind and ids, never its answers). */
  onError?: (error: unknown, body: Exclude<WebhookBody, { type: 'ping' }>) => void;
  /** What a member sees when an invocation's function threw (default: "Something went wrong; try again"). */
  failureMessage?: string;
  replayStore?: ReplayStore;
}) {
  const replayStore = app.replayStore ?? new MemoryReplayStore();
  const commandFlows = new Map((app.manifest?.commands ?? []).flatMap((command) => (command.flow ? [[command.id, command.flow] as const] : [])));
  const onError =
    app.onError ??
    ((error: unknown, body: Exclude<WebhookBody, { type: 'ping' }>) => {
      const what = body.type === 'invocation' ? `invocation ${body.id} (${body.command ?? body.flow ?? body.action?.id ?? 'unknown'}${body.step ? `, step ${body.step}` : ''})` : `${body.type} ${body.id}`;
      logError(`the handler of ${what} threw`, error);
    });
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
        const taken = await take(replayStore, verified.replayKey);
        if (taken !== 'NEW') {
          res.writeHead(taken === 'HANDLED' ? 204 : 409).end();
          return;
        }
        let reply: Reply | null;
        try {
          reply = await dispatched(app, commandFlows, body);
        } catch (error) {
          await replayStore.abandon(verified.replayKey);
          reportSafely(onError, error, body);
          if (body.type === 'invocation') {
            const failed: Reply = { type: 'error', userMessage: app.failureMessage ?? 'Something went wrong; try again', code: 'HANDLER_FAILED' };
            res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(failed));
          } else res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'HANDLER_FAILED' }));
          return;
        }
        await replayStore.finish(verified.replayKey, REPLAY_TTL_SECONDS);
        if (reply === null) res.writeHead(204).end();
        else res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(reply));
      })().catch((error: unknown) => {
        // The SDK's own steps failed (a replay store that does not answer, a body that is not JSON).
        logError('a webhook call could not be handled', error);
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'SDK_FAILED' }));
      });
    });
  };
}

/** A line on stderr: the SDK has no logger of the app's to use (an app that has one gives `onError`). */
function logError(what: string, error: unknown): void {
  // eslint-disable-next-line no-console -- an SDK's last resort, where the app gave no hook
  console.error(`[app-sdk] ${what}:`, error);
}

/** `onError`, whose own failure is logged and goes no further. */
function reportSafely(onError: (error: unknown, body: Exclude<WebhookBody, { type: 'ping' }>) => void, error: unknown, body: Exclude<WebhookBody, { type: 'ping' }>): void {
  try {
    onError(error, body);
  } catch (hookError) {
    logError('onError threw', hookError);
  }
}

/** What the app's functions answer to a call: an invocation's reply, a payment event's (or none), a room event's none. */
async function dispatched(
  app: Parameters<typeof webhookHandler>[0],
  commandFlows: Map<string, string>,
  body: Exclude<WebhookBody, { type: 'ping' }>,
): Promise<Reply | null> {
  switch (body.type) {
    case 'invocation':
      return routed(app, commandFlows, body);
    case 'app.added':
    case 'app.removed':
      await app.onRoomEvent?.(body);
      return null;
    default:
      return (await app.onPaymentEvent?.(body)) ?? null;
  }
}

/**
 * The handler of an invocation: its flow's (a card-opened form's, or, a step of a form a command
 * opened, that command's flow from the manifest), its command's, its button's, or the catch-all; an
 * error reply when none.
 */
function routed(
  app: { flows?: Record<string, InvocationFn>; commands?: Record<string, InvocationFn>; actions?: Record<string, InvocationFn>; onInvocation?: InvocationFn },
  commandFlows: Map<string, string>,
  body: InvocationBody,
): Promise<Reply> | Reply {
  // A command with a form is only ever invoked with the form's answers: each call is a step of it.
  const flow = body.flow ?? (body.command !== null ? commandFlows.get(body.command) : undefined);
  const handler = (flow !== undefined ? app.flows?.[flow] : undefined) ?? (body.command !== null ? app.commands?.[body.command] : undefined) ?? (body.action ? app.actions?.[body.action.id] : undefined) ?? app.onInvocation;
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
