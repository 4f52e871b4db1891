import { z } from 'zod';
import { CardSchema, ViewSchema, type Card } from '../../platform/cards.schemas.js';

export { BlockSchema, CardSchema, ViewSchema, type Card, type View } from '../../platform/cards.schemas.js';

const Text = (max: number) => z.string().min(1).max(max);

/** Every reply an app may give an invocation, each checked against its bounds. */
export const ReplySchema = z.discriminatedUnion('type', [
  z
    .object({
      type: z.literal('card'),
      visibility: z.enum(['room', 'private']).optional(),
      update: z.boolean().optional().describe('Answering a press of a card\'s button: replace that card (the message it is on) instead of posting a new one'),
      card: CardSchema.optional(),
      template: Text(64).optional().describe('A template of the manifest, instead of card'),
      data: z.record(z.string(), z.union([z.string().max(3000), z.number()])).optional().describe('Values for the template\'s {{name}} placeholders'),
    })
    .strict()
    .refine((reply) => (reply.card === undefined) !== (reply.template === undefined), 'a card, or a template'),
  z.object({ type: z.literal('ack'), message: Text(120) }).strict(),
  // The answer comes later, through the invocation's follow-up URL (the app needs longer than its reply time).
  z.object({ type: z.literal('deferred'), message: Text(120).optional() }).strict(),
  z.object({ type: z.literal('error'), userMessage: Text(200), code: z.string().max(64).optional() }).strict(),
  z.object({ type: z.literal('view'), view: ViewSchema }).strict(),
  z
    .object({
      type: z.literal('payment'),
      payment: z
        .object({
          amount: z.string().regex(/^(0|[1-9]\d{0,17})(\.\d{1,18})?$/),
          currency: z.enum(['ETH', 'USDT']),
          reference: Text(64),
          description: Text(200),
          expiresIn: z.number().int().min(60).max(86_400),
          card: CardSchema.optional().describe('Shown to the member once they paid'),
          declinedCard: CardSchema.optional().describe('Shown to the member when they decline, or the sheet expires'),
        })
        .strict(),
    })
    .strict(),
]);
export type Reply = z.infer<typeof ReplySchema>;

/** The first problem zod found in a reply, as `where: what`. */
export function firstProblem(error: z.ZodError): string {
  const issue = error.issues[0];
  return issue ? `${issue.path.length > 0 ? issue.path.join('.') : 'reply'}: ${issue.message}` : 'reply: not valid';
}

/**
 * Why a reply to a payment event is not shown to the payer (it still acknowledges the event): not a
 * reply, or not a kind the payer is shown (a card given inline, an ack, an error); null when it is.
 */
export function paymentReplyRefusal(reply: unknown): string | null {
  const parsed = ReplySchema.safeParse(reply);
  if (!parsed.success) return `refused, not shown: ${firstProblem(parsed.error)}`;
  const { type } = parsed.data;
  if (type === 'card' && !parsed.data.card) return 'refused, not shown: a card replying to a payment event is given inline (no template)';
  return type === 'card' || type === 'ack' || type === 'error' ? null : `refused, not shown: a ${type} reply is not shown for a payment event`;
}

/**
 * A manifest template filled with `data`: every `{{name}}` in its texts replaced; null when a name has
 * no value or the result breaks a card's bounds.
 */
export function fillTemplate(template: unknown, data: Record<string, string | number>): Card | null {
  let missing = false;
  const fill = (value: unknown): unknown => {
    if (typeof value === 'string')
      return value.replace(/\{\{\s*([A-Za-z0-9_.-]+)\s*\}\}/g, (_all, name: string) => {
        if (!(name in data)) missing = true;
        return String(data[name] ?? '');
      });
    if (Array.isArray(value)) return value.map(fill);
    if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, fill(v)]));
    return value;
  };
  const filled = CardSchema.safeParse(fill(template));
  return missing || !filled.success ? null : filled.data;
}
