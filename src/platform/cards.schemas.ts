import { z } from 'zod';

/**
 * Cards in the style of Slack's Block Kit (spec, "Webhook replies"; docs/apps/overview.md): a list
 * of blocks, each with its `type` and fields, every text bounded. An `input` block belongs in a view.
 * Every block and part has a name of its own in the OpenAPI documents, so that generated clients get
 * one stable class per kind of block (a `discriminator` on `type` tells them apart).
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
  .strict()
  .meta({ id: 'AppCardButton' });

const BLOCKS = [
  z.object({ type: z.literal('title'), text: Text(150) }).strict().meta({ id: 'AppCardTitleBlock' }),
  z.object({ type: z.literal('text'), text: Text(3000) }).strict().meta({ id: 'AppCardTextBlock' }),
  z
    .object({ type: z.literal('fields'), fields: z.array(z.object({ label: Text(60), value: Text(300) }).strict().meta({ id: 'AppCardField' })).min(1).max(10) })
    .strict()
    .meta({ id: 'AppCardFieldsBlock' }),
  z.object({ type: z.literal('image'), url: z.url({ protocol: /^https$/, error: 'An image URL must be an absolute https:// URL' }).max(2048), alt: Text(200) }).strict().meta({ id: 'AppCardImageBlock' }),
  z.object({ type: z.literal('divider') }).strict().meta({ id: 'AppCardDividerBlock' }),
  z.object({ type: z.literal('context'), text: Text(300) }).strict().meta({ id: 'AppCardContextBlock' }),
  z.object({ type: z.literal('actions'), buttons: z.array(ButtonSchema).min(1).max(5) }).strict().meta({ id: 'AppCardActionsBlock' }),
] as const;

export const BlockSchema = z.discriminatedUnion('type', [...BLOCKS]).meta({ id: 'AppCardBlock' });

export const CardSchema = z.object({ blocks: z.array(BlockSchema).min(1).max(50) }).strict().meta({ id: 'AppCard' });
export type Card = z.infer<typeof CardSchema>;

/** A view's input block: the manifest's input (same id and rules), with a text and default that may change. */
const ViewInputSchema = z
  .object({ type: z.literal('input'), id: Text(64), label: Text(100).optional(), default: z.unknown().optional(), rules: z.record(z.string(), z.unknown()).optional() })
  .strict()
  .meta({ id: 'AppViewInputBlock' });
const ViewBlockSchema = z.discriminatedUnion('type', [...BLOCKS, ViewInputSchema]).meta({ id: 'AppViewBlock' });
export const ViewSchema = z
  .object({ id: Text(64), title: Text(100), blocks: z.array(ViewBlockSchema).max(50) })
  .strict()
  .meta({ id: 'AppView' });
export type View = z.infer<typeof ViewSchema>;
