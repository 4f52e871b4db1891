import type { Card, Reply } from './types.js';

/** An error answer of the service's interfaces: its status, ErrorResponse code and, when it gave them, its details (which field, which rule). */
export class ServiceApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: unknown = null,
  ) {
    super(details === null ? message : `${message}: ${JSON.stringify(details)}`);
    this.name = 'ServiceApiError';
  }
}

/** The answer's JSON, or null when it has none (an empty body, a proxy's HTML error page). */
function parseJson(text: string): unknown {
  try {
    return text ? (JSON.parse(text) as unknown) : null;
  } catch {
    return null;
  }
}

async function call<T>(baseUrl: string, credential: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<T> {
  const res = await fetch(new URL(path, baseUrl), {
    method,
    headers: { authorization: `Bearer ${credential}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  const parsed = parseJson(text);
  if (!res.ok) {
    const error = parsed as { code?: string; message?: string; details?: unknown } | null;
    throw new ServiceApiError(res.status, error?.code ?? 'UNKNOWN', error?.message ?? res.statusText, error?.details ?? null);
  }
  return parsed as T;
}

/** The bot interface (`/bot-api/v1`) with a room bot token (`bbt_…`): cards and plain text. */
export class BotClient {
  constructor(
    private readonly baseUrl: string,
    private readonly token: string,
  ) {}

  postCard(roomId: string, card: Card): Promise<{ messageId: string; roomId: string; createdAt: string }> {
    return call(this.baseUrl, this.token, 'POST', `/bot-api/v1/rooms/${encodeURIComponent(roomId)}/cards`, card);
  }

  /** A plain text message (cleaned as a member's post is, at most 10,000 characters). */
  postText(roomId: string, text: string): Promise<{ messageId: string; roomId: string; createdAt: string }> {
    return call(this.baseUrl, this.token, 'POST', `/bot-api/v1/rooms/${encodeURIComponent(roomId)}/messages`, { text });
  }
}

export interface Payment {
  id: string;
  kind: string;
  status: string;
  amount: string;
  refunded: string;
  currency: 'ETH' | 'USDT';
  reference: string;
  description: string;
  /** A test payment (the app in test mode): seen with a test key (`bpk_test_…`) only. */
  test: boolean;
  userId: string;
  createdAt: number;
  completedAt: number | null;
}
export interface MoneyMovement {
  id: string;
  kind: 'REFUND' | 'PAYOUT';
  paymentId: string | null;
  userId: string | null;
  amount: string;
  currency: 'ETH' | 'USDT';
  status: 'DONE' | 'FAILED' | 'PENDING';
  /** Made with a test key: test money, nothing moved. */
  test: boolean;
  createdAt: string;
}

/**
 * The payments interface (`/app-api/v1`) with a payments key (`bpk_…`), or a test key (`bpk_test_…`:
 * test payments, a test balance, refunds and payouts of test money). Refunds and payouts take an
 * idempotency key: retry with the same one.
 */
export class PaymentsClient {
  constructor(
    private readonly baseUrl: string,
    private readonly key: string,
  ) {}

  payment(paymentId: string): Promise<Payment> {
    return call(this.baseUrl, this.key, 'GET', `/app-api/v1/payments/${encodeURIComponent(paymentId)}`);
  }

  paymentByReference(reference: string): Promise<Payment> {
    return call(this.baseUrl, this.key, 'GET', `/app-api/v1/payments?reference=${encodeURIComponent(reference)}`);
  }

  balance(): Promise<{ balances: { currency: 'ETH' | 'USDT'; available: string }[]; test: boolean }> {
    return call(this.baseUrl, this.key, 'GET', '/app-api/v1/balance');
  }

  refund(paymentId: string, input: { amount?: string; idempotencyKey: string }): Promise<MoneyMovement> {
    return call(this.baseUrl, this.key, 'POST', `/app-api/v1/payments/${encodeURIComponent(paymentId)}/refunds`, input.amount === undefined ? {} : { amount: input.amount }, { 'idempotency-key': input.idempotencyKey });
  }

  payout(input: { userId: string; amount: string; currency: 'ETH' | 'USDT'; idempotencyKey: string }): Promise<MoneyMovement> {
    return call(this.baseUrl, this.key, 'POST', '/app-api/v1/payouts', { userId: input.userId, amount: input.amount, currency: input.currency }, { 'idempotency-key': input.idempotencyKey });
  }
}

/**
 * Answers an invocation later, after replying `{type: 'deferred'}`: a card (into the room it was
 * invoked from, or `visibility: 'private'` to the member alone), an ack or an error, posted to the
 * invocation's `followUp.url` (the URL is the credential). Up to 5 answers within 15 minutes.
 */
export async function answerLater(followUpUrl: string, reply: Extract<Reply, { type: 'card' | 'ack' | 'error' }>): Promise<{ outcome: 'card' | 'ack' | 'error'; messageId: string | null }> {
  const res = await fetch(followUpUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(reply) });
  const parsed = parseJson(await res.text()) as { code?: string; message?: string; details?: unknown } | null;
  if (!res.ok) throw new ServiceApiError(res.status, parsed?.code ?? 'UNKNOWN', parsed?.message ?? res.statusText, parsed?.details ?? null);
  return parsed as { outcome: 'card' | 'ack' | 'error'; messageId: string | null };
}
