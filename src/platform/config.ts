import { z } from 'zod';
import { CRASH_POINTS } from './crash-points.js';
import { LANGUAGE_CODE } from './common.schemas.js';
import { REDIS_URL_PATTERN } from './redis.js';

/** Parses "900", "900s", "15m", "12h" or "30d" into whole seconds. */
const duration = z
  .string()
  .trim()
  .regex(/^\d+(s|m|h|d)?$/, 'expected a duration such as 900, 15m, 12h or 30d')
  .transform((value) => {
    const amount = Number.parseInt(value, 10);
    const unit = value.at(-1);
    const factor = unit === 'm' ? 60 : unit === 'h' ? 3600 : unit === 'd' ? 86_400 : 1;
    return amount * factor;
  })
  .refine((seconds) => seconds > 0, 'must be greater than zero');

const port = z.coerce.number().int('must be a whole number').min(0).max(65_535);
const positiveInt = z.coerce.number().int('must be a whole number').positive();
const redisUrl = z.string().regex(REDIS_URL_PATTERN, 'expected a redis:// or rediss:// URL, or redis-cluster://host:port,host:port');
const evmAddress = z.string().regex(/^0x[0-9a-fA-F]{40}$/, 'expected an EVM address: 0x and 40 hex digits');
const decimalString = z.string().regex(/^\d{1,30}(\.\d{1,18})?$/, 'expected a decimal amount such as 100 or 0.05');
const e164 = z.string().regex(/^\+[1-9]\d{6,14}$/, 'expected E.164 numbers such as +14155550123');

const DEV_JWT_SECRET = 'development-only-jwt-secret-do-not-use-in-production';
/** Development only: the seed of the key that signs what apps verify (32 bytes, base64). */
const DEV_APPS_SIGNING_KEY = Buffer.from('development-only-apps-signing-ke').toString('base64');
/** Development only: the key apps' webhook secrets are encrypted with at rest (32 bytes, base64). */
const DEV_APPS_SECRET_KEY = Buffer.from('development-only-apps-secret-key').toString('base64');
const DEV_TURN_SECRET = 'development-only-turn-secret';
const DEV_SFU_SECRET = 'development-only-sfu-secret';
const DEV_MNEMONIC = 'test test test test test test test test test test test junk';
const DEV_HOT_WALLET_KEY = '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80';

const EnvSchema = z
  .object({
    NODE_ENV: z.enum(['development', 'test', 'production']).default('development'),
    LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    HOST: z.string().min(1).default('127.0.0.1'),
    HTTP_PORT: port.default(8080),
    SOCKET_PORT: port.default(8081),
    SOCKET_ENGINE: z.enum(['uws', 'ws']).default('uws'),
    // The socket transports the hub accepts: WebSocket only by default; adding polling (long-polling,
    // for networks that block WebSockets) needs sticky sessions in front of several hubs (docs/operators/scaling.md).
    SOCKET_TRANSPORTS: z
      .string()
      .default('websocket')
      .transform((value) => value.split(',').map((name) => name.trim()).filter(Boolean))
      .pipe(z.array(z.enum(['websocket', 'polling'])).min(1)),
    // Every role serves /healthz, /readyz and /metrics on this port (production default 9090; elsewhere
    // off unless set; 0 picks a free port). Keep it internal: it is for the orchestrator and Prometheus.
    OPS_PORT: port.optional(),
    // Chaos tests only (refused in production): named points (src/platform/crash-points.ts) where the
    // process kills itself (SIGKILL), as a crash there would.
    CRASH_AT: z
      .string()
      .default('')
      .transform((value) => value.split(',').map((name) => name.trim()).filter(Boolean))
      .pipe(z.array(z.enum(CRASH_POINTS))),
    // Whether the api's public port serves /metrics too (off: metrics belong on OPS_PORT).
    METRICS_ON_PUBLIC_PORT: z.enum(['true', 'false']).default('false').transform((value) => value === 'true'),
    // Sockets that stop reading (docs/operators/operations.md, "Slow sockets"): past this many unsent bytes a socket's device
    // events wait in its inbox; slow for HUB_SLOW_SOCKET_GRACE_MS, or at 4 times the bytes, it is disconnected.
    HUB_SLOW_SOCKET_BYTES: z.coerce.number().int().min(1024).max(64 * 1024 * 1024).default(256 * 1024),
    HUB_SLOW_SOCKET_GRACE_MS: z.coerce.number().int().min(100).max(600_000).default(10_000),
    // auto: on in a process that runs the realtime role alone (a hub node), off where the hub shares
    // a process with the api or worker, whose heaps churn with every request and job (issue 53).
    HUB_MEMORY_SAVER: z.enum(['auto', 'true', 'false']).default('auto'),
    // How the api and worker send a room broadcast: true, as the frame a hub writes to its sockets
    // unchanged (issue 55); false, as the socket.io adapter's JSON message, which hubs built before
    // encoded broadcasts also read (set it while those still run: docs/operators/production.md, "Rolling upgrades").
    ROOM_BROADCASTS_ENCODED: z.enum(['true', 'false']).default('true').transform((value) => value === 'true'),
    PUBLIC_BASE_URL: z.url().optional(),
    // Files members send and data exports are served from this origin when set (a host of its own,
    // say https://media.example.com, reaching the same api nodes): no member's file ever shares an
    // origin with the console. docs/operators/production.md, "Files on their own origin".
    MEDIA_BASE_URL: z.url().optional(),
    BODY_LIMIT: positiveInt.default(1_048_576),
    /** Trust X-Forwarded-For from this many proxy hops (0: use the connection's address). */
    TRUST_PROXY_HOPS: z.coerce.number().int().min(0).max(10).default(0),

    MONGODB_URL: z.string().regex(/^mongodb(\+srv)?:\/\//, 'expected a mongodb:// or mongodb+srv:// URL').default('mongodb://127.0.0.1:27017/'),
    MONGODB_DB: z.string().regex(/^[A-Za-z0-9_-]{1,63}$/, 'letters, digits, _ and - only').default('chat'),
    // Redis by role (docs/operators/scaling.md, "Redis by role"): state (inboxes, presence, limits, caches'
    // values) at REDIS_URL; queues and pub/sub (the hubs' adapter, pokes, cache clearings) at their own
    // URLs when given, else at REDIS_URL. Each is one server or a cluster (redis-cluster://host:port,host:port).
    REDIS_URL: redisUrl.default('redis://127.0.0.1:6379'),
    REDIS_QUEUES_URL: redisUrl.optional(),
    REDIS_PUBSUB_URL: redisUrl.optional(),
    // How long a request may wait on MongoDB or Redis when either stops answering before it gets 503
    // (milliseconds), and how often each is checked (docs/operators/runbooks.md).
    DEPENDENCY_TIMEOUT_MS: z.coerce.number().int().min(200).max(60_000).default(3_000),
    // A request with an Idempotency-Key holds it this long, renewed while it runs (a crashed process's hold ends with it).
    IDEMPOTENCY_LEASE_SECONDS: z.coerce.number().int().min(2).max(3600).default(10),
    // A job holds its lock this long, renewed at half while it runs; a job whose worker died runs again within about twice this.
    WORKER_LOCK_MS: z.coerce.number().int().min(500).max(600_000).default(30_000),
    // How often a worker checks that the repeating schedules (sweeps, scans, the reconciler) are in
    // Redis, and puts back any that are missing (a Redis that came back empty).
    WORKER_SCHEDULE_CHECK_MS: z.coerce.number().int().min(100).max(3_600_000).default(30_000),
    DEPENDENCY_PROBE_MS: z.coerce.number().int().min(100).max(60_000).default(1_000),
    REDIS_PREFIX: z.string().regex(/^[A-Za-z0-9_:.-]{1,64}$/).default('chat:'),

    JWT_SECRET: z.string().min(32, 'must be at least 32 characters').optional(),
    ACCESS_TOKEN_TTL: duration.default(900),
    REFRESH_TOKEN_TTL: duration.default(30 * 86_400),
    TWO_FACTOR_TOKEN_TTL: duration.default(300),
    TOTP_ISSUER: z.string().min(1).max(64).default('Chat Platform'),

    LOGIN_CODE_TTL: duration.default(300),
    LOGIN_CODE_MAX_ATTEMPTS: positiveInt.default(5),
    LOGIN_CODE_MAX_PER_WINDOW: positiveInt.default(5),
    LOGIN_CODE_WINDOW: duration.default(900),
    // argon2id cost of the stored SMS codes (memory in KiB, passes): the library's defaults; the
    // tests lower it (a sign-in costs two hashes), production may not go below OWASP's 19 MiB, 2 passes.
    CODE_HASH_MEMORY_KIB: positiveInt.pipe(z.number().min(1024).max(1_048_576)).default(65_536),
    CODE_HASH_PASSES: positiveInt.pipe(z.number().max(10)).default(3),

    SMS_PROVIDER: z.enum(['outbox', 'twilio']).optional(),
    ALLOW_OUTBOX_PROVIDERS: z.enum(['true', 'false']).default('false').transform((value) => value === 'true'),
    // Sign-in abuse (docs/clients/sign-in.md, "Sign-in abuse"): the countries texts may go to (ISO 3166 codes; every
    // country when unset outside production, required in production), the number types (libphonenumber's)
    // they may go to, and hourly budgets of texts per destination country, per number prefix and in all
    // (production defaults below; generous outside production, where a test run signs in thousands).
    SMS_ALLOWED_COUNTRIES: z
      .string()
      .transform((value) => value.split(',').map((code) => code.trim().toUpperCase()).filter(Boolean))
      .pipe(z.array(z.string().regex(/^[A-Z]{2}$/, 'expected ISO 3166 country codes such as DE or US')).min(1))
      .optional(),
    SMS_ALLOWED_NUMBER_TYPES: z
      .string()
      .default('MOBILE,FIXED_LINE_OR_MOBILE')
      .transform((value) => value.split(',').map((type) => type.trim().toUpperCase()).filter(Boolean))
      .pipe(z.array(z.enum(['MOBILE', 'FIXED_LINE_OR_MOBILE', 'FIXED_LINE', 'VOIP', 'TOLL_FREE', 'PREMIUM_RATE', 'SHARED_COST', 'PERSONAL_NUMBER', 'PAGER', 'UAN', 'VOICEMAIL', 'UNKNOWN'])).min(1)),
    SMS_BUDGET_COUNTRY_HOUR: positiveInt.optional(),
    SMS_BUDGET_PREFIX_HOUR: positiveInt.optional(),
    SMS_BUDGET_GLOBAL_HOUR: positiveInt.optional(),
    // The same budgets for invitations by SMS, counted apart from the sign-in codes' (docs/clients/people.md).
    SMS_INVITE_BUDGET_COUNTRY_HOUR: positiveInt.optional(),
    SMS_INVITE_BUDGET_PREFIX_HOUR: positiveInt.optional(),
    SMS_INVITE_BUDGET_GLOBAL_HOUR: positiveInt.optional(),
    // Connection requests by phone number or e-mail address one member may make (whether or not the
    // address has an account, so the limit tells nothing): per hour and per day; past them 429.
    CONTACT_INVITES_PER_HOUR: z.coerce.number().int().min(1).max(100_000).default(5),
    CONTACT_INVITES_PER_DAY: z.coerce.number().int().min(1).max(100_000).default(20),
    // Per client address (the real one behind TRUST_PROXY_HOPS) and per network (/24 for IPv4, /56 for
    // IPv6), per SIGNIN_ADDRESS_WINDOW: code requests, and sign-in attempts (login and two-factor).
    // Production's values everywhere, so they are seen working in development.
    SIGNIN_CODES_PER_ADDRESS: positiveInt.default(10),
    SIGNIN_CODES_PER_NETWORK: positiveInt.default(50),
    SIGNIN_ATTEMPTS_PER_ADDRESS: positiveInt.default(30),
    SIGNIN_ATTEMPTS_PER_NETWORK: positiveInt.default(150),
    SIGNIN_ADDRESS_WINDOW: duration.default(3600),
    // At most this many argon2 hashes (SMS codes) at once per process; the rest wait up to the wait, then 503 BUSY.
    CODE_HASH_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(4),
    CODE_HASH_WAIT_MS: z.coerce.number().int().min(0).max(60_000).default(2_000),
    SMS_OUTBOX_FILE: z.string().min(1).default('.data/sms-outbox.jsonl'),
    TWILIO_ACCOUNT_SID: z.string().regex(/^AC[0-9a-fA-F]{32}$/, 'expected AC followed by 32 hex digits').optional(),
    TWILIO_AUTH_TOKEN: z.string().min(16).optional(),
    TWILIO_FROM: e164.optional(),
    TWILIO_API_BASE: z.url().default('https://api.twilio.com'),

    EMAIL_PROVIDER: z.enum(['outbox', 'sendgrid']).optional(),
    EMAIL_OUTBOX_FILE: z.string().min(1).default('.data/email-outbox.jsonl'),
    EMAIL_FROM: z.email('expected an e-mail address').default('no-reply@chat.invalid'),
    SENDGRID_API_KEY: z.string().min(10).optional(),
    SENDGRID_API_BASE: z.url().default('https://api.sendgrid.com'),

    STORAGE_PROVIDER: z.enum(['local', 's3']).default('local'),
    STORAGE_DIR: z.string().min(1).default('.data/blobs'),
    UPLOAD_STAGING_DIR: z.string().min(1).optional(),
    S3_ENDPOINT: z.url().optional(),
    S3_REGION: z.string().min(1).default('us-east-1'),
    S3_BUCKET: z.string().regex(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/, 'not an S3 bucket name').optional(),
    S3_ACCESS_KEY_ID: z.string().min(1).optional(),
    S3_SECRET_ACCESS_KEY: z.string().min(1).optional(),
    S3_PATH_STYLE: z.enum(['true', 'false']).default('true').transform((value) => value === 'true'),
    MEDIA_QUEUE_MAX: positiveInt.default(1000),
    TICKET_TTL: duration.default(300),
    // Profile pictures: the largest upload taken, in bytes (5 MiB).
    AVATAR_MAX_BYTES: positiveInt.default(5 * 1024 * 1024),

    SUMMARIZER: z.enum(['extractive', 'openai']).default('extractive'),
    OPENAI_BASE_URL: z.url().optional(),
    OPENAI_API_KEY: z.string().min(1).optional(),
    OPENAI_MODEL: z.string().min(1).default('gpt-4o-mini'),

    PRESENCE_TTL: duration.default(30),
    INBOX_MAX_EVENTS: positiveInt.default(1000),
    INBOX_MAX_AGE: duration.default(7 * 86_400),

    PUSH_PROVIDER: z.enum(['local', 'remote']).optional(),
    PUSH_LOCAL_RATE: z.coerce.number().int().min(0).default(0),
    PUSH_PART_MEMBERS: z.coerce.number().int().min(1).max(100_000).default(1000),
    APNS_KEY_ID: z.string().regex(/^[A-Z0-9]{10}$/, 'expected the 10-character key id').optional(),
    APNS_TEAM_ID: z.string().regex(/^[A-Z0-9]{10}$/, 'expected the 10-character team id').optional(),
    APNS_PRIVATE_KEY_FILE: z.string().min(1).optional(),
    APNS_BUNDLE_ID: z.string().regex(/^[A-Za-z0-9.-]+$/).optional(),
    APNS_ORIGIN: z.url().default('https://api.push.apple.com'),
    FCM_SERVICE_ACCOUNT_FILE: z.string().min(1).optional(),
    FCM_API_BASE: z.url().default('https://fcm.googleapis.com'),

    TURN_SECRET: z.string().min(16, 'must be at least 16 characters').optional(),
    TURN_URLS: z.string().default('turn:127.0.0.1:3478?transport=udp,turn:127.0.0.1:3478?transport=tcp'),
    STUN_URLS: z.string().default('stun:127.0.0.1:3478'),
    TURN_CREDENTIAL_TTL: duration.default(12 * 3600),
    CALL_RING_TIMEOUT: duration.default(45),

    // Room calls through the SFU (mediasoup). The sfu role serves a control API to the api role on
    // SFU_CONTROL_PORT, guarded by SFU_SECRET; media flows on UDP/TCP ports SFU_RTC_MIN_PORT..MAX_PORT.
    MEDIASOUP_WORKER_BIN: z.string().min(1).optional(),
    SFU_WORKERS: z.coerce.number().int().min(1).max(64).default(1),
    SFU_CONTROL_PORT: port.default(8082),
    SFU_CONTROL_URL: z.url().optional(),
    SFU_SECRET: z.string().min(16, 'must be at least 16 characters').optional(),
    SFU_LISTEN_IP: z.string().min(1).default('127.0.0.1'),
    SFU_ANNOUNCED_ADDRESS: z.string().min(1).optional(),
    SFU_RTC_MIN_PORT: port.default(40000),
    SFU_RTC_MAX_PORT: port.default(40999),
    ROOM_CALL_MAX_PARTICIPANTS: z.coerce.number().int().min(2).max(100).default(16),

    SUPPORTED_LANGUAGES: z
      .string()
      .default('en,de,fr,es,it,pt,ru,uk,pl,tr,ar,zh,ja,ko,hi')
      .transform((value) => value.split(',').map((code) => code.trim()).filter(Boolean))
      .pipe(z.array(z.string().regex(LANGUAGE_CODE, 'expected language codes such as en or pt-BR')).min(1)),

    // Web clients on other origins (docs/operators/configuration.md, "Web clients"): the origins
    // allowed to call the REST api from a browser, exactly as a browser sends them
    // (https://chat.example.com). Empty (the default): no cross-origin calls.
    CORS_ORIGINS: z
      .string()
      .default('')
      .transform((value) => value.split(',').map((origin) => origin.trim()).filter(Boolean))
      .pipe(z.array(z.string().regex(/^https?:\/\/[a-z0-9.-]+(:\d{1,5})?$/i, 'expected origins such as https://chat.example.com, with no path'))),

    ADMIN_PHONES: z
      .string()
      .default('')
      .transform((value) => value.split(',').map((phone) => phone.trim()).filter(Boolean))
      .pipe(z.array(e164)),

    // App platform (docs/apps/overview.md): the key webhook secrets are encrypted with at rest (base64
    // of 32 bytes; required in production), and whether webhooks may go to private, loopback and
    // link-local addresses and plain HTTP (development and tests only).
    APPS_SECRET_KEY: z
      .string()
      .refine((value) => Buffer.from(value, 'base64').length === 32, 'expected base64 of 32 bytes')
      .optional(),
    // The seed (base64 of 32 bytes; required in production) of the Ed25519 key that signs cards and
    // session tokens for apps, published at /.well-known/jwks.json.
    APPS_SIGNING_KEY: z
      .string()
      .refine((value) => Buffer.from(value, 'base64').length === 32, 'expected base64 of 32 bytes')
      .optional(),
    WEBHOOK_ALLOW_PRIVATE: z.enum(['true', 'false']).default('false').transform((value) => value === 'true'),
    // Cards one room bot token may post per minute (/bot-api/v1).
    BOT_CARDS_PER_MINUTE: z.coerce.number().int().min(1).max(100_000).default(30),
    // How long after posting its author may edit a message, and delete it for everyone (seconds).
    MESSAGE_EDIT_WINDOW: duration.default(172_800),
    MESSAGE_DELETE_WINDOW: duration.default(172_800),
    // Invitations into rooms (and message requests) a member may send per hour to people they are not
    // connected to, and how many strangers' invitations may wait for one member (docs/clients/rooms-and-messages.md).
    ROOM_INVITATIONS_PER_HOUR: z.coerce.number().int().min(1).max(100_000).default(40),
    // Messages a stranger may send with a message request before the other person accepts it.
    MESSAGE_REQUEST_POSTS: z.coerce.number().int().min(1).max(1_000).default(3),
    ROOM_INVITATIONS_WAITING: z.coerce.number().int().min(1).max(100_000).default(50),
    // Reports one member may make per hour (docs/clients/moderation.md).
    REPORTS_PER_HOUR: z.coerce.number().int().min(1).max(100_000).default(20),
    // A DNS server (host:port) webhooks' names are resolved with, instead of the system's resolver.
    WEBHOOK_DNS_SERVER: z.string().regex(/^[\w.:-]+:\d+$/, 'expected host:port').optional(),
    // Seconds a form (a dynamic flow under way) may wait for its next step before it expires.
    APPS_FORM_TTL: z.coerce.number().int().min(60).max(86_400).default(1_800),
    // Seconds between a payment event's attempts (Standard Webhooks' schedule; each with ±10 % jitter).
    WEBHOOK_RETRY_SCHEDULE: z
      .string()
      .default('5,300,1800,7200,18000,36000,50400,72000,86400')
      .transform((value) => value.split(',').map((step) => Number(step.trim())))
      .pipe(z.array(z.number().positive().max(7 * 86_400)).min(1).max(20)),

    // End-to-end encryption (docs/clients/e2ee.md): per-device budgets of key calls (share
    // uploads and key requests together) and of encrypted uploads per minute; the largest encrypted
    // attachment (blob and thumbnail together); how long an upload no message uses is kept.
    E2EE_KEY_CALLS_PER_MINUTE: z.coerce.number().int().min(1).max(100_000).default(60),
    E2EE_UPLOADS_PER_MINUTE: z.coerce.number().int().min(1).max(100_000).default(30),
    E2EE_ATTACHMENT_MAX_BYTES: z.coerce.number().int().min(1024).max(2 * 1024 * 1024 * 1024).default(100 * 1024 * 1024),
    E2EE_UNUSED_UPLOAD_TTL: duration.default(24 * 3600),

    // Wallets (docs/clients/wallets.md): the EVM chain, the hot wallet's key, the deposit addresses' mnemonic.
    EVM_RPC_URL: z.url().default('http://127.0.0.1:8545'),
    USDT_TOKEN_ADDRESS: evmAddress.optional(),
    HOT_WALLET_PRIVATE_KEY: z.custom<`0x${string}`>((value) => typeof value === 'string' && /^0x[0-9a-fA-F]{64}$/.test(value), 'expected 0x and 64 hex digits').optional(),
    DEPOSIT_MNEMONIC: z.string().min(20).optional(),
    DEPOSIT_CONFIRMATIONS: z.coerce.number().int().min(0).max(1000).default(2),
    // How long a call to the chain's node may take before it counts as no answer (milliseconds).
    EVM_RPC_TIMEOUT_MS: z.coerce.number().int().min(100).max(120_000).default(10_000),
    // A withdrawal still unsent after this long (a worker died, or the chain did not answer) is sent again by the sweep.
    WITHDRAWAL_RESEND_AFTER: duration.default(30),
    // The lowest sending-limit tier's daily allowance, per currency, in its units (decimal strings).
    WALLET_DAILY_LIMIT_ETH: decimalString.default('0.05'),
    WALLET_DAILY_LIMIT_USDT: decimalString.default('100'),
    // The flat fee of a withdrawal, in the wallet's currency.
    WITHDRAWAL_FEE_ETH: decimalString.default('0.0005'),
    WITHDRAWAL_FEE_USDT: decimalString.default('1'),
    // Swaps: the fee in basis points of the amount, how long a quote holds, and what the house starts
    // with in each currency (its own money, put in once, so members can swap from the first day).
    SWAP_FEE_BPS: z.coerce.number().int().min(0).max(1000).default(50),
    SWAP_QUOTE_TTL: duration.default(30),
    HOUSE_LIQUIDITY_ETH: decimalString.default('100'),
    HOUSE_LIQUIDITY_USDT: decimalString.default('300000'),
    // How old a device must be before it may ask for a higher sending limit.
    LIMIT_REQUEST_DEVICE_WAIT: duration.default(3 * 86_400),
    // How long a payment request stays open.
    PAYMENT_REQUEST_TTL: duration.default(7 * 86_400),
    // Where prices come from: the static feed (development, tests) or CoinGecko's public API.
    // Production must name it: the static feed (a made-up price) only when set by hand.
    PRICE_SOURCE: z.enum(['static', 'coingecko']).optional(),
    COINGECKO_BASE_URL: z.url().default('https://api.coingecko.com'),
    COINGECKO_API_KEY: z.string().min(1).optional(),
    // The static price feed (development, tests): what one ETH costs in USDT.
    WALLET_STATIC_ETH_USDT: decimalString.default('3000'),
  })
  .superRefine((env, ctx) => {
    if (env.NODE_ENV === 'production' && env.CRASH_AT.length > 0) ctx.addIssue({ code: 'custom', path: ['CRASH_AT'], message: 'is for chaos tests only' });
    if (env.NODE_ENV === 'production' && env.WEBHOOK_ALLOW_PRIVATE) ctx.addIssue({ code: 'custom', path: ['WEBHOOK_ALLOW_PRIVATE'], message: 'is for development and tests only' });
    if (env.SFU_RTC_MIN_PORT > env.SFU_RTC_MAX_PORT) ctx.addIssue({ code: 'custom', path: ['SFU_RTC_MIN_PORT'], message: 'must not exceed SFU_RTC_MAX_PORT' });
    if (env.NODE_ENV === 'production' && (env.CODE_HASH_MEMORY_KIB < 19_456 || env.CODE_HASH_PASSES < 2)) {
      ctx.addIssue({ code: 'custom', path: ['CODE_HASH_MEMORY_KIB'], message: 'must be at least 19456 KiB with at least 2 passes in production' });
    }
    for (const key of ['JWT_SECRET', 'TURN_SECRET', 'SFU_SECRET', 'HOT_WALLET_PRIVATE_KEY', 'DEPOSIT_MNEMONIC', 'USDT_TOKEN_ADDRESS', 'APPS_SECRET_KEY', 'APPS_SIGNING_KEY'] as const) {
      if (env.NODE_ENV === 'production' && !env[key]) ctx.addIssue({ code: 'custom', path: [key], message: 'is required in production' });
    }
    for (const key of ['TURN_URLS', 'STUN_URLS'] as const) {
      const bad = env[key].split(',').map((url) => url.trim()).filter((url) => url && !/^(stun|stuns|turn|turns):[^\s]+$/.test(url));
      if (bad.length > 0) ctx.addIssue({ code: 'custom', path: [key], message: `not STUN/TURN URLs: ${bad.join(', ')}` });
    }
    const emailProvider = env.EMAIL_PROVIDER ?? (env.NODE_ENV === 'production' ? 'sendgrid' : 'outbox');
    if (emailProvider === 'sendgrid' && !env.SENDGRID_API_KEY) {
      ctx.addIssue({ code: 'custom', path: ['SENDGRID_API_KEY'], message: 'is required when EMAIL_PROVIDER is sendgrid' });
    }
    if (env.STORAGE_PROVIDER === 's3') {
      for (const key of ['S3_ENDPOINT', 'S3_BUCKET', 'S3_ACCESS_KEY_ID', 'S3_SECRET_ACCESS_KEY'] as const) {
        if (!env[key]) ctx.addIssue({ code: 'custom', path: [key], message: 'is required when STORAGE_PROVIDER is s3' });
      }
    }
    if (env.SUMMARIZER === 'openai' && !env.OPENAI_BASE_URL) {
      ctx.addIssue({ code: 'custom', path: ['OPENAI_BASE_URL'], message: 'is required when SUMMARIZER is openai' });
    }
    const apns = ['APNS_KEY_ID', 'APNS_TEAM_ID', 'APNS_PRIVATE_KEY_FILE', 'APNS_BUNDLE_ID'] as const;
    if (apns.some((key) => env[key]) && !apns.every((key) => env[key])) {
      for (const key of apns) if (!env[key]) ctx.addIssue({ code: 'custom', path: [key], message: 'APNs needs all of ' + apns.join(', ') });
    }
    // The outbox files are development's providers: production writing codes to a file would lock
    // every member out without a word. Allowed only when said so (a trial, a staging copy).
    for (const key of ['SMS_PROVIDER', 'EMAIL_PROVIDER'] as const) {
      if (env.NODE_ENV === 'production' && env[key] === 'outbox' && !env.ALLOW_OUTBOX_PROVIDERS) {
        ctx.addIssue({ code: 'custom', path: [key], message: 'outbox writes to a file in production: set twilio or sendgrid, or ALLOW_OUTBOX_PROVIDERS=true for a trial' });
      }
    }
    if (env.NODE_ENV === 'production' && !env.SMS_ALLOWED_COUNTRIES) {
      ctx.addIssue({ code: 'custom', path: ['SMS_ALLOWED_COUNTRIES'], message: 'is required in production: the ISO 3166 codes of the countries sign-in texts may go to' });
    }
    if (env.NODE_ENV === 'production' && !env.PRICE_SOURCE) {
      ctx.addIssue({ code: 'custom', path: ['PRICE_SOURCE'], message: 'is required in production: coingecko, or static (a fixed price, for trials only) set by hand' });
    }
    const push = env.PUSH_PROVIDER ?? (env.NODE_ENV === 'production' ? 'remote' : 'local');
    if (push === 'remote' && !env.APNS_KEY_ID && !env.FCM_SERVICE_ACCOUNT_FILE) {
      ctx.addIssue({ code: 'custom', path: ['PUSH_PROVIDER'], message: 'remote needs APNs (APNS_KEY_ID, APNS_TEAM_ID, APNS_PRIVATE_KEY_FILE, APNS_BUNDLE_ID) or FCM (FCM_SERVICE_ACCOUNT_FILE) credentials; set PUSH_PROVIDER=local to run without pushes to phones' });
    }
    const provider = env.SMS_PROVIDER ?? (env.NODE_ENV === 'production' ? 'twilio' : 'outbox');
    if (provider === 'twilio') {
      for (const key of ['TWILIO_ACCOUNT_SID', 'TWILIO_AUTH_TOKEN', 'TWILIO_FROM'] as const) {
        if (!env[key]) ctx.addIssue({ code: 'custom', path: [key], message: 'is required when SMS_PROVIDER is twilio' });
      }
    }
  })
  .transform((env) => ({
    ...env,
    JWT_SECRET: env.JWT_SECRET ?? DEV_JWT_SECRET,
    TURN_SECRET: env.TURN_SECRET ?? DEV_TURN_SECRET,
    SFU_SECRET: env.SFU_SECRET ?? DEV_SFU_SECRET,
    APPS_SECRET_KEY: env.APPS_SECRET_KEY ?? DEV_APPS_SECRET_KEY,
    APPS_SIGNING_KEY: env.APPS_SIGNING_KEY ?? DEV_APPS_SIGNING_KEY,
    // Hardhat's public development account #0 and mnemonic: funded only on development chains.
    HOT_WALLET_PRIVATE_KEY: env.HOT_WALLET_PRIVATE_KEY ?? DEV_HOT_WALLET_KEY,
    DEPOSIT_MNEMONIC: env.DEPOSIT_MNEMONIC ?? DEV_MNEMONIC,
    SMS_PROVIDER: env.SMS_PROVIDER ?? (env.NODE_ENV === 'production' ? ('twilio' as const) : ('outbox' as const)),
    EMAIL_PROVIDER: env.EMAIL_PROVIDER ?? (env.NODE_ENV === 'production' ? ('sendgrid' as const) : ('outbox' as const)),
    PUSH_PROVIDER: env.PUSH_PROVIDER ?? (env.NODE_ENV === 'production' ? ('remote' as const) : ('local' as const)),
    PRICE_SOURCE: env.PRICE_SOURCE ?? ('static' as const),
    // Whether PRICE_SOURCE=static was asked for by hand in production (the process warns at start).
    staticPricesInProduction: env.NODE_ENV === 'production' && env.PRICE_SOURCE === 'static',
    OPS_PORT: env.OPS_PORT ?? (env.NODE_ENV === 'production' ? 9090 : undefined),
    SMS_BUDGET_COUNTRY_HOUR: env.SMS_BUDGET_COUNTRY_HOUR ?? (env.NODE_ENV === 'production' ? 2_000 : 1_000_000),
    SMS_BUDGET_PREFIX_HOUR: env.SMS_BUDGET_PREFIX_HOUR ?? (env.NODE_ENV === 'production' ? 100 : 1_000_000),
    SMS_BUDGET_GLOBAL_HOUR: env.SMS_BUDGET_GLOBAL_HOUR ?? (env.NODE_ENV === 'production' ? 10_000 : 1_000_000),
    SMS_INVITE_BUDGET_COUNTRY_HOUR: env.SMS_INVITE_BUDGET_COUNTRY_HOUR ?? (env.NODE_ENV === 'production' ? 500 : 1_000_000),
    SMS_INVITE_BUDGET_PREFIX_HOUR: env.SMS_INVITE_BUDGET_PREFIX_HOUR ?? (env.NODE_ENV === 'production' ? 20 : 1_000_000),
    SMS_INVITE_BUDGET_GLOBAL_HOUR: env.SMS_INVITE_BUDGET_GLOBAL_HOUR ?? (env.NODE_ENV === 'production' ? 2_000 : 1_000_000),
  }));

/** The variables production requires, each with what it needs: what a start with none of them set reports. */
export function productionRequirements(): string[] {
  const result = EnvSchema.safeParse({ NODE_ENV: 'production' });
  return result.success ? [] : [...new Set(result.error.issues.map((issue) => String(issue.path[0])))];
}

/** Every variable the configuration reads, with its default where it has one (the table of docs/operators/configuration.md is made from this). */
export function configurationVariables(): { name: string; default: string | undefined }[] {
  /** The default as written (before a duration or a list is parsed), where the schema has one. */
  const defaultOf = (schema: z.ZodType): unknown => {
    // Cast: zod's def is typed per schema kind; only these fields are read, when present.
    const def = schema.def as { type: string; defaultValue?: unknown; in?: z.ZodType };
    if (def.type === 'default') return def.defaultValue;
    return def.type === 'pipe' && def.in ? defaultOf(def.in) : undefined;
  };
  return Object.entries(EnvSchema.in.shape).map(([name, schema]) => {
    // Cast: every entry of the environment shape is a zod schema.
    const written = defaultOf(schema as z.ZodType);
    return { name, default: written === undefined ? undefined : String(written) };
  });
}

export const CONFIG_TABLE_MARKERS = { start: '<!-- configuration-table:start -->', end: '<!-- configuration-table:end -->' };

/** The table of every variable in docs/operators/configuration.md: its default, and what production requires (`npm run docs:tables`). */
export function configTableMarkdown(): string {
  const required = new Set(productionRequirements());
  const rows = configurationVariables().map(({ name, default: fallback }) => {
    const shown = fallback === undefined ? '—' : fallback === '' ? '(empty)' : `\`${fallback.replaceAll('|', '\\|')}\``;
    return `| \`${name}\` | ${shown} | ${required.has(name) ? 'required' : ''} |`;
  });
  return ['| variable | default | production |', '|---|---|---|', ...rows].join('\n');
}

export type Config = z.output<typeof EnvSchema>;

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n${problems.map((problem) => `  ${problem}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

/** Reads the configuration from environment variables; throws ConfigError naming every bad variable. */
/** The address clients reach the REST api at, without a trailing slash (for links the service hands out). */
export function publicBaseUrl(config: Pick<Config, 'PUBLIC_BASE_URL' | 'HOST' | 'HTTP_PORT'>): string {
  return (config.PUBLIC_BASE_URL ?? `http://${config.HOST}:${config.HTTP_PORT}`).replace(/\/$/, '');
}

/** Where ticket links to files (`/media`, `/exports`) point: MEDIA_BASE_URL, else the public base. */
export function mediaBaseUrl(config: Pick<Config, 'MEDIA_BASE_URL' | 'PUBLIC_BASE_URL' | 'HOST' | 'HTTP_PORT'>): string {
  return config.MEDIA_BASE_URL ? config.MEDIA_BASE_URL.replace(/\/$/, '') : publicBaseUrl(config);
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  // Empty strings count as unset, as in most deployment tools.
  const present = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== undefined && value !== ''));
  const parsed = EnvSchema.safeParse(present);
  if (!parsed.success) {
    throw new ConfigError(parsed.error.issues.map((issue) => `${issue.path.join('.') || '(environment)'}: ${issue.message}`));
  }
  return parsed.data;
}
