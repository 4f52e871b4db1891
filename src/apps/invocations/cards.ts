import { z } from 'zod';

/**
 * Cards in the style of Slack's Block Kit (spec, "Webhook replies"; README, "App platform"): a list
 * of blocks, each with its `type` and fields, every text bounded. An `input` block belongs in a view.
 */
const Text = (max: number) => z.string().min(1).max(max);
const ButtonSchema = z
  .object({
    id: Text(64),
    label: Text(40),
    style: z.enum(['primary', 'danger', 'default']).optional(),
    kind: z.enum(['submit', 'open_flow']),
    /** With open_flow: the flow the button opens (declared in the manifest). */
    flow: Text(64).optional(),
    /** Sent back with the tap (submit) or on every step of the flow (open_flow); at most 4 KB. */
    payload: z.record(z.string(), z.unknown()).optional(),
  })
  .strict();

export const BlockSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('title'), text: Text(150) }).strict(),
  z.object({ type: z.literal('text'), text: Text(3000) }).strict(),
  z.object({ type: z.literal('fields'), fields: z.array(z.object({ label: Text(60), value: Text(300) }).strict()).min(1).max(10) }).strict(),
  z.object({ type: z.literal('image'), url: z.url({ protocol: /^https$/ }).max(2048), alt: Text(200) }).strict(),
  z.object({ type: z.literal('divider') }).strict(),
  z.object({ type: z.literal('context'), text: Text(300) }).strict(),
  z.object({ type: z.literal('actions'), buttons: z.array(ButtonSchema).min(1).max(5) }).strict(),
]);

export const CardSchema = z.object({ blocks: z.array(BlockSchema).min(1).max(50) }).strict().meta({ id: 'AppCard' });
export type Card = z.infer<typeof CardSchema>;

/** A view's input block: the manifest's input (same id and rules), with a text and default that may change. */
const ViewInputSchema = z
  .object({ type: z.literal('input'), id: Text(64), label: Text(100).optional(), default: z.unknown().optional(), rules: z.record(z.string(), z.unknown()).optional() })
  .strict();
export const ViewSchema = z
  .object({ id: Text(64), title: Text(100), blocks: z.array(z.union([BlockSchema, ViewInputSchema])).max(50) })
  .strict()
  .meta({ id: 'AppView' });
export type View = z.infer<typeof ViewSchema>;

/** Every reply an app may give an invocation, each checked against its bounds. */
export const ReplySchema = z.discriminatedUnion('type', [
  z
    .object({
      type: z.literal('card'),
      visibility: z.enum(['room', 'private']).optional(),
      card: CardSchema.optional(),
      template: Text(64).optional().describe('A template of the manifest, instead of card'),
      data: z.record(z.string(), z.union([z.string().max(3000), z.number()])).optional().describe('Values for the template\'s {{name}} placeholders'),
    })
    .strict()
    .refine((reply) => (reply.card === undefined) !== (reply.template === undefined), 'a card, or a template'),
  z.object({ type: z.literal('ack'), message: Text(120) }).strict(),
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
          card: CardSchema.optional(),
        })
        .strict(),
    })
    .strict(),
]);
export type Reply = z.infer<typeof ReplySchema>;

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
