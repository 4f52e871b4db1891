import { z } from 'zod';
import { IdParam, IsoDateTime } from '../platform/common.schemas.js';

export const INPUT_TYPES = ['text', 'number', 'select', 'date', 'boolean'] as const;
/** Scopes by name (spec, "Authentication", 8): what an app may do or receive beyond the per-app user id. */
export const SCOPES = ['payments', 'conversation.ref', 'user.name', 'user.language', 'user.location'] as const;

const DeclId = z.string().min(1).max(64).regex(/^[A-Za-z0-9][A-Za-z0-9_.-]*$/, 'letters, digits and _ . -, starting with a letter or digit');

/** A command's free text: at most this many characters (and this many when the manifest names no bound). */
export const COMMAND_TEXT_MAX = 2000;
export const COMMAND_TEXT_DEFAULT = 500;

const InputSchema = z
  .object({
    id: DeclId,
    type: z.enum(INPUT_TYPES),
    label: z.string().min(1).max(100),
    required: z.boolean().optional(),
    rules: z
      .object({
        minLength: z.number().int().min(0).max(10_000).optional(),
        maxLength: z.number().int().min(1).max(10_000).optional(),
        min: z.number().optional(),
        max: z.number().optional(),
        pattern: z.string().max(200).optional(),
        options: z.array(z.object({ value: z.string().min(1).max(100), label: z.string().min(1).max(100) }).strict()).min(1).max(100).optional(),
      })
      .strict()
      .optional(),
  })
  .strict();

export const ManifestSchema = z
  .object({
    version: z.string().min(1).max(32).regex(/^[0-9A-Za-z.+-]+$/, 'a version such as 1.0.0'),
    commands: z
      .array(
        z
          .object({
            id: DeclId,
            title: z.string().min(1).max(100),
            description: z.string().max(300).optional(),
            flow: DeclId.optional(),
            argument: z
              .object({
                label: z.string().min(1).max(100).describe('What the text is, shown as the command\'s hint (e.g. "city")'),
                required: z.boolean().optional(),
                maxLength: z.number().int().min(1).max(COMMAND_TEXT_MAX).optional().describe(`At most ${COMMAND_TEXT_MAX}; ${COMMAND_TEXT_DEFAULT} when not given`),
              })
              .strict()
              .optional()
              .describe('Free text after the command, as `/weather Berlin`: sent to the app as `text`'),
            options: z.array(InputSchema).max(10).optional().describe('Typed options given with the command (a select\'s choices, numbers, dates, booleans, short texts), as Discord\'s slash commands: sent to the app in `values`'),
          })
          .strict(),
      )
      .min(1, 'at least one command: members start an app from its commands')
      .max(50),
    flows: z
      .array(
        z
          .object({
            id: DeclId,
            mode: z.enum(['static', 'dynamic']),
            views: z.array(z.object({ id: DeclId, title: z.string().min(1).max(100), inputs: z.array(InputSchema).max(30) }).strict()).min(1).max(8),
          })
          .strict(),
      )
      .max(50),
    scopes: z.array(z.enum(SCOPES)).max(SCOPES.length),
    templates: z
      .array(z.object({ id: DeclId, card: z.record(z.string(), z.unknown()).describe('An AppCard whose texts may hold {{name}} placeholders') }).strict())
      .max(20)
      .optional()
      .describe('Cards a reply may name instead of sending one: {type: card, template, data}'),
    sealing: z.object({ publicKey: z.string().max(64).describe('Base64 of a 32-byte X25519 public key') }).strict().optional(),
  })
  .strict()
  .meta({ id: 'AppManifest' });

const WebhookUrl = z.string().max(2048).describe('https:// URL of the app\'s webhook endpoint');

export const AppCreateSchema = z.object({ name: z.string().min(1).max(100), webhookUrl: WebhookUrl }).strict().meta({ id: 'AppCreateRequest' });
export const AppUpdateSchema = z
  .object({
    name: z.string().min(1).max(100).optional(),
    webhookUrl: WebhookUrl.optional(),
    public: z.boolean().optional().describe('Listed in the directory, so any member may install it'),
    testMode: z.boolean().optional().describe('Test mode: the payments the app asks for from now on are test payments (marked so to the member; confirming one moves no money)'),
  })
  .strict()
  .meta({ id: 'AppUpdateRequest' });

export const AppDtoSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    webhookUrl: z.string(),
    manifestVersion: z.string().nullable(),
    manifestHash: z.string().nullable(),
    health: z.enum(['UNKNOWN', 'UP', 'DOWN']),
    public: z.boolean(),
    testMode: z.boolean().describe('The payments the app asks for are test payments'),
    replyTimeoutSeconds: z.number().describe('How long the app may take to reply: 5, or up to 120 granted by a site administrator'),
    secretRotating: z.boolean().describe('True for 24 hours after a rotation: calls carry the old secret\'s signature too'),
    previousSecretValidUntil: IsoDateTime.nullable().describe('While rotating: when the previous secret stops signing calls'),
    createdAt: IsoDateTime,
  })
  .meta({ id: 'AppDto' });

export const AppCreatedSchema = AppDtoSchema.extend({ webhookSecret: z.string().describe('whsec_…: shown this once') }).meta({ id: 'AppCreatedDto' });
export const WebhookSecretSchema = z.object({ webhookSecret: z.string().describe('The new whsec_…: shown this once'), previousValidUntil: IsoDateTime }).meta({ id: 'WebhookSecretDto' });
export const ManifestResultSchema = z.object({ version: z.string(), manifestHash: z.string().describe('Hex SHA-256 of the manifest with keys sorted at every level, no whitespace') }).meta({ id: 'ManifestResultDto' });

export const CredentialDtoSchema = z
  .object({
    id: z.string(),
    kind: z.enum(['BOT_TOKEN', 'PAYMENT_KEY']),
    test: z.boolean().describe('A test payments key (bpk_test_…): it sees and makes test money only'),
    prefix: z.string().describe('The first characters, to tell tokens apart'),
    roomId: z.string().nullable(),
    createdAt: IsoDateTime,
  })
  .meta({ id: 'AppCredentialDto' });
export const CredentialCreatedSchema = CredentialDtoSchema.extend({ token: z.string().describe('bbt_… or bpk_…: shown this once, stored only as a hash') }).meta({ id: 'AppCredentialCreatedDto' });
export const PaymentKeyCreateSchema = z
  .object({ test: z.boolean().optional().describe('A test key (bpk_test_…): it sees the app\'s test payments only, and its refunds and payouts are test money') })
  .strict()
  .meta({ id: 'PaymentKeyCreateRequest' });
export const BotTokenCreateSchema = z
  .object({ roomId: IdParam.optional().describe('A room the app was added to: the token opens that room only. Without it, the token opens every room the app is in, while it is in it') })
  .strict()
  .meta({ id: 'BotTokenCreateRequest' });

export const ActivityDtoSchema = z
  .object({
    id: z.string(),
    deliveryId: z.string(),
    event: z.string().describe('invocation, ping, payment.completed, …'),
    outcome: z.enum(['OK', 'APP_ERROR', 'FAILED']),
    status: z.number().int().nullable().describe('The HTTP status of the reply (null when none came)'),
    ms: z.number().int(),
    requestBytes: z.number().int(),
    replyBytes: z.number().int(),
    failure: z.string().nullable().describe('ADDRESS_REFUSED, CONNECTION_FAILED, TIMEOUT, REDIRECT, SERVER_ERROR, NOT_JSON, TOO_LARGE, CONTRACT, CLIENT_ERROR (the app\'s 4xx), PAYMENT_REFUSED (a `payment` reply the service could not open: the member was told it failed), or, for a call not made, BREAKER_OPEN or TOO_MANY_CONCURRENT'),
    detail: z.string().nullable().describe('CONTRACT: what broke it (the first problem: where and what); PAYMENT_REFUSED: which field and why (an amount with more decimals than its currency, a reference used before); a payment event\'s reply that was received but not shown to the payer: why'),
    appErrorCode: z.string().nullable().describe('An `error` reply\'s `code`, as the app gave it (never shown to members)'),
    test: z.boolean().describe('About a test payment: its event, or the reply that opened it'),
    request: z.string().nullable().describe('The JSON body sent (headers aside), its first 2,048 characters'),
    reply: z.string().nullable().describe('The reply\'s body as text, its first 2,048 characters; null when no reply came'),
    createdAt: IsoDateTime,
  })
  .meta({ id: 'AppActivityDto' });

export const AppForMemberSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    health: z.enum(['UNKNOWN', 'UP', 'DOWN']),
    installed: z.boolean().describe('false: used through a room it was added to (or owned, or found in the directory)'),
    manifestVersion: z.string().describe('The version the member uses: the installed one, else the current'),
    currentVersion: z.string(),
    manifest: ManifestSchema.describe('Commands, flows with their views and inputs (with rules), templates, scopes'),
  })
  .meta({ id: 'AppForMember' });

export const DirectoryEntrySchema = z
  .object({ id: z.string(), name: z.string(), manifestVersion: z.string(), health: z.enum(['UNKNOWN', 'UP', 'DOWN']).describe('DOWN after two failed health checks in a row, until a pong') })
  .meta({ id: 'AppDirectoryEntryDto' });

export const InstallDtoSchema = z
  .object({
    appId: z.string(),
    name: z.string(),
    appUserId: z.string().describe('The id this app knows the member by'),
    manifestVersion: z.string().describe('The version the member uses (kept until they install again)'),
    currentVersion: z.string().describe('The app\'s newest manifest version'),
    installedAt: IsoDateTime,
  })
  .meta({ id: 'AppInstallDto' });

export const ReplyTimeoutSchema = z.object({ seconds: z.number().int().min(1).max(120) }).strict().meta({ id: 'AppReplyTimeoutRequest' });
