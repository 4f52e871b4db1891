import { randomUUID } from 'node:crypto';
import type { Session } from './app.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** One message as a phone sends it: its own Idempotency-Key and client message id, kept for every retry. */
export interface Send {
  key: string;
  clientMessageId: string;
  text: string;
}

export function sendsOf(count: number, label: string): Send[] {
  return Array.from({ length: count }, (_, i) => ({ key: randomUUID(), clientMessageId: randomUUID(), text: `${label} ${i}` }));
}

/** Posts over real HTTP; a connection that breaks is `null`, as a phone sees a lost answer. */
export async function post(baseUrl: string, s: Session, roomId: string, send: Send): Promise<{ status: number; body: unknown; retryAfter: number } | null> {
  try {
    const res = await fetch(`${baseUrl}/api/messages/${roomId}`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${s.accessToken}`, 'content-type': 'application/json', 'idempotency-key': send.key },
      body: JSON.stringify({ roomId, message: send.text, clientMessageId: send.clientMessageId }),
      signal: AbortSignal.timeout(20_000),
    });
    return { status: res.status, body: await res.json(), retryAfter: Number(res.headers.get('retry-after') ?? 0) };
  } catch {
    return null;
  }
}

export type Answer = Awaited<ReturnType<typeof post>>;

/**
 * What a phone does until it has an answer: retry lost answers and 5xx, wait out 409 and 503 as told;
 * `observe` sees every attempt's answer and how long it took.
 */
export async function untilAnswered(baseUrl: string, s: Session, roomId: string, send: Send, observe: (answer: Answer, ms: number) => void = () => undefined): Promise<string> {
  const deadline = Date.now() + 60_000;
  for (let attempt = 0; ; attempt++) {
    const started = performance.now();
    const answer = await post(baseUrl, s, roomId, send);
    observe(answer, performance.now() - started);
    if (answer?.status === 200) return answer.body as string;
    if (answer && answer.status < 500 && answer.status !== 409) throw new Error(`send ${send.text} answered ${answer.status} ${JSON.stringify(answer.body)}`);
    if (Date.now() > deadline) throw new Error(`send ${send.text} never answered: ${JSON.stringify(answer)}`);
    await sleep(answer?.retryAfter ? answer.retryAfter * 1000 : Math.min(1_000, 50 * 2 ** attempt));
  }
}

/** The ids of a room's newest messages (up to 100), as a phone reads them over REST to catch up; retried while the service is away. */
export async function latestMessageIds(baseUrl: string, s: Session, roomId: string): Promise<string[]> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const res = await fetch(`${baseUrl}/api/messages/${roomId}?limit=100`, { headers: { authorization: `Bearer ${s.accessToken}` }, signal: AbortSignal.timeout(10_000) }).catch(() => null);
    if (res?.status === 200) return ((await res.json()) as { items: { id: string }[] }).items.map((item) => item.id);
    if (Date.now() > deadline) throw new Error(`reading room ${roomId}'s messages answered ${res?.status}`);
    await sleep(200);
  }
}
