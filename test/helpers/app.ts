import { english, generateMnemonic } from 'viem/accounts';
import { randomInt, randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../rest/app.js';
import type { Db } from 'mongodb';
import { shiftableClock, type ShiftableClock } from '../../src/platform/clock.js';
import { loadConfig, type Config } from '../../src/platform/config.js';
import { startWorkers, type Workers } from '../../workers/main.js';
import { createContext, type AppContext } from '../../src/composition.js';
import { createLogger } from '../../src/platform/logger.js';

export interface TestApp {
  ctx: AppContext;
  /** The test file's own database, to look at what the service stored. */
  db: Db;
  app: FastifyInstance;
  config: Config;
  /** The services' clock: real time until a test moves it (instead of sleeping). */
  clock: ShiftableClock;
  outbox: string;
  close(): Promise<void>;
}

/**
 * A context on the real MongoDB-compatible server and Redis that `npm test` started, with a fresh
 * database and Redis prefix, so test files run in parallel without seeing each other.
 */
export async function testConfig(overrides: Record<string, string> = {}): Promise<Config> {
  const id = randomUUID().replaceAll('-', '').slice(0, 12);
  const tmp = process.env.TEST_TMP ?? os.tmpdir();
  return loadConfig({
    ...process.env,
    NODE_ENV: 'test',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    MONGODB_DB: `t_${id}`,
    REDIS_PREFIX: `t:${id}:`,
    SMS_OUTBOX_FILE: path.join(tmp, `sms-${id}.jsonl`),
    JWT_SECRET: `test-secret-${randomUUID()}`,
    // Real argon2id at a low cost: a sign-in hashes twice, and the tests sign in hundreds of users.
    CODE_HASH_MEMORY_KIB: '4096',
    CODE_HASH_PASSES: '2',
    // Each test app's deposit addresses are its own: test files share one chain.
    DEPOSIT_MNEMONIC: generateMnemonic(english),
    // The in-process test apps are read with inject(): their metrics on the public port (the default, off, is tested in ops).
    METRICS_ON_PUBLIC_PORT: 'true',
    ...overrides,
  });
}

/** The REST api over a context, without listening. */
export function apiOf(ctx: AppContext): Promise<FastifyInstance> {
  return buildApp({ services: ctx.services, config: ctx.platform.config, logger: ctx.platform.logger });
}

/** The worker role over the test app's context. */
export function startTestWorkers(t: TestApp): Promise<Workers> {
  return startWorkers(t.ctx.platform, t.ctx.services);
}

export async function startTestApp(overrides: Record<string, string> = {}): Promise<TestApp> {
  const config = await testConfig(overrides);
  const clock = shiftableClock();
  const ctx = await createContext(config, createLogger(config, 'test'), { clock, monitorCommands: true });
  const app = await apiOf(ctx);
  return {
    ctx,
    clock,
    db: ctx.platform.db,
    app,
    config,
    outbox: config.SMS_OUTBOX_FILE,
    async close() {
      await app.close();
      await ctx.platform.db.dropDatabase().catch(() => undefined);
      await ctx.close();
    },
  };
}

/**
 * The address a test phone signs in from: its own, derived from the number, so a code request and its
 * login come from one place (the per-address sign-in limits keep production's values).
 */
export function addressOf(phone: string): string {
  const digits = phone.replace(/\D/g, '').slice(-6).padStart(6, '0');
  return `10.${Number(digits.slice(0, 2))}.${Number(digits.slice(2, 4))}.${Number(digits.slice(4, 6)) + 1}`;
}

/**
 * The records of a development outbox file (one JSON line each), the complete lines only: another
 * text may be half-written while a test reads (parallel sign-ins), and its line is not finished yet.
 */
export async function readOutbox<T = Record<string, unknown>>(file: string): Promise<T[]> {
  const text = await readFile(file, 'utf8').catch(() => '');
  const complete = text.slice(0, text.lastIndexOf('\n') + 1);
  return complete.split('\n').filter(Boolean).map((line) => JSON.parse(line) as T);
}

/** The newest code texted to `phone`, read from the SMS outbox file like a phone would read its SMS. */
export async function lastCode(outbox: string, phone: string): Promise<string> {
  const lines = await readOutbox<{ to: string; code: string; text: string }>(outbox);
  const mine = lines.filter((line) => line.to === phone);
  const last = mine.at(-1);
  if (!last) throw new Error(`no SMS to ${phone}`);
  if (!last.text.includes(last.code)) throw new Error('the SMS text does not carry the code');
  return last.code;
}

/** Configuration of the Twilio adapter pointed at `apiBase` (by default a closed port: the provider is down). */
export function twilioAt(apiBase = 'http://127.0.0.1:9'): Record<string, string> {
  return {
    SMS_PROVIDER: 'twilio',
    TWILIO_ACCOUNT_SID: 'AC0123456789abcdef0123456789abcdef',
    TWILIO_AUTH_TOKEN: 'auth-token-secret-value',
    TWILIO_FROM: '+15005550006',
    TWILIO_API_BASE: apiBase,
  };
}

/** A fresh valid German mobile number per call: eight random digits make collisions negligible. */
export function freshPhone(): string {
  return `+49151${randomInt(10_000_000, 100_000_000)}`;
}

export interface Session {
  accessToken: string;
  refreshToken: string;
  deviceId: string;
  userId: string;
}

export function bearer(token: string) {
  return { authorization: `Bearer ${token}` };
}

/** Code by SMS, then login: the whole sign-in a phone does. */
export async function signIn(t: TestApp, phone = freshPhone(), device = { name: 'Test phone', platform: 'IOS' }): Promise<Session> {
  // Each phone from an address of its own, as phones are: the per-address sign-in limits keep production's values.
  const remoteAddress = addressOf(phone);
  const sent = await t.app.inject({ method: 'POST', url: '/api/auth/code', payload: { phone }, remoteAddress });
  if (sent.statusCode !== 204) throw new Error(`code request answered ${sent.statusCode}: ${sent.body}`);
  const login = await t.app.inject({ method: 'POST', url: '/api/auth/login', payload: { phone, code: await lastCode(t.outbox, phone), device }, remoteAddress });
  if (login.statusCode !== 200) throw new Error(`login answered ${login.statusCode}: ${login.body}`);
  return login.json() as Session;
}

/** The push the local provider recorded matching `filter`, waiting up to `ms` for the worker to send it. */
export async function recordedPush(t: TestApp, filter: Record<string, unknown>, ms = 5_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const record = await t.db.collection('push_records').findOne(filter);
    if (record || Date.now() > deadline) return record;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
