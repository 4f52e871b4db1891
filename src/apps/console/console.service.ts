import { randomBytes, randomUUID } from 'node:crypto';
import type { z } from 'zod';
import type { Clock } from '../../platform/clock.js';
import { isDuplicateKey } from '../../platform/mongo.js';
import { page, type Page } from '../../platform/paging.js';
import type { AdminAuditRepo } from '../../platform/admin-audit.repo.js';
import type { Principal } from '../../platform/principal.js';
import type { RoomsPolicy } from '../../rooms/index.js';
import type { AppsPolicy } from '../apps.policy.js';
import { AppsErrors } from '../apps.errors.js';
import { CommonErrors } from '../../platform/common.errors.js';
import type { ActivityFilter, AppDoc, AppsRepo, CredentialDoc } from '../apps.repo.js';
import type { AppCreatedSchema, AppDtoSchema, CredentialCreatedSchema, CredentialDtoSchema, ManifestResultSchema, WebhookSecretSchema } from '../apps.schemas.js';
import { manifestHash, parseManifest } from '../shared/manifest.js';
import { newSecret, sealSecret, tokenHash, tokenMatches } from './secrets.js';
import { webhookUrlProblem } from '../delivery/webhook-client.js';
import { presentActivity, type ActivityView, type WebhooksService } from '../delivery/webhooks.service.js';
import { wordsOf } from '../../platform/words.js';
import { must } from '../../platform/must.js';

export type AppView = z.infer<typeof AppDtoSchema>;
export interface AppOverview {
  app: AppView;
  breakerOpen: boolean;
  /** When the open breaker lets a call through again (null: closed). */
  breakerOpenUntil: string | null;
  installs: number;
}
type CredentialView = z.infer<typeof CredentialDtoSchema>;

const ROTATION_OVERLAP_MS = 24 * 3600 * 1000;
export const DEFAULT_TIMEOUT_MS = 5_000;
const CREDENTIAL_PREFIX = { BOT_TOKEN: 'bbt_', PAYMENT_KEY: 'bpk_' } as const;

// Every column of the JSON row: what broke (failure, detail) and the app's own error code included.
const CSV_COLUMNS = ['createdAt', 'deliveryId', 'event', 'outcome', 'status', 'ms', 'requestBytes', 'replyBytes', 'failure', 'detail', 'appErrorCode', 'request', 'reply', 'id', 'test'] as const;

/**
 * One CSV field: quoted (quotes doubled) when it holds a comma, a quote or a line break; empty for
 * null. A text that a spreadsheet would run as a formula (beginning with = + - @, or a tab or carriage
 * return before one) gets a leading apostrophe, as OWASP advises: an app's reply cannot become a
 * formula in the developer's spreadsheet. Numbers stay numbers.
 */
export function csvField(value: string | number | null): string {
  if (value === null) return '';
  const text = typeof value === 'string' && /^[=+\-@\t\r]/.test(value) ? `'${value}` : String(value);
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

const presentCredential = (doc: CredentialDoc): CredentialView => ({ id: doc._id, kind: doc.kind, test: doc.test === true, prefix: doc.prefix, roomId: doc.roomId, createdAt: doc.createdAt.toISOString() });

/**
 * The developer console (docs/apps/overview.md): an app belongs to the member who made it; its
 * webhook secret is shown once and kept encrypted (it must sign), rotated with 24 hours of overlap;
 * room bot tokens and payments keys are shown once and kept only as hashes. Room admins add apps to
 * their rooms.
 */
export class AppsService {
  constructor(
    private readonly deps: {
      repo: AppsRepo;
      webhooks: WebhooksService;
      rooms: RoomsPolicy;
      policy: Pick<AppsPolicy, 'mayAddToRoom'>;
      isSiteAdmin: (userId: string) => Promise<boolean>;
      /** How many members have an app installed. */
      countInstalls: (appId: string) => Promise<number>;
      /** What money is still with the app (its balances, payments open or being paid), said in words; none: it may go. */
      moneyWith: (appId: string) => Promise<string[]>;
      /** Every member's install of the app removed, and the ids it knew them by forgotten. */
      forgetInstalls: (appId: string, at: Date) => Promise<void>;
      /** The administrators' audit log. */
      audit: Pick<AdminAuditRepo, 'record'>;
      secretKey: Buffer;
      allowPrivate: boolean;
      clock: Clock;
    },
  ) {}

  present(app: AppDoc): AppView {
    const now = this.deps.clock().getTime();
    const retiring = app.secrets.find((s) => s.retiresAt !== null && s.retiresAt.getTime() > now);
    return {
      id: app._id,
      name: app.name,
      webhookUrl: app.webhookUrl,
      manifestVersion: app.manifestVersion,
      manifestHash: app.manifestHash,
      health: app.health,
      public: app.public,
      testMode: app.testMode === true,
      replyTimeoutSeconds: app.timeoutMs / 1000,
      secretRotating: retiring !== undefined,
      previousSecretValidUntil: retiring?.retiresAt?.toISOString() ?? null,
      createdAt: app.createdAt.toISOString(),
    };
  }

  /** The caller's own app, or 400 APP_NOT_FOUND (also for another member's). */
  async owned(principal: Principal, appId: string): Promise<AppDoc> {
    const app = await this.deps.repo.findApp(appId);
    if (!app || app.ownerId !== principal.userId) throw AppsErrors.APP_NOT_FOUND();
    return app;
  }

  private assertUrl(url: string): void {
    const problem = webhookUrlProblem(url, this.deps.allowPrivate);
    if (problem) throw AppsErrors.WEBHOOK_URL_INVALID({ message: `The webhook URL ${problem}` });
  }

  async create(principal: Principal, input: { name: string; webhookUrl: string }): Promise<z.infer<typeof AppCreatedSchema>> {
    this.assertUrl(input.webhookUrl);
    const now = this.deps.clock();
    const secret = newSecret('whsec_');
    const app: AppDoc = {
      _id: randomUUID(),
      ownerId: principal.userId,
      name: input.name.trim() || input.name,
      nameWords: wordsOf(input.name),
      public: false,
      webhookUrl: input.webhookUrl,
      secrets: [{ sealed: sealSecret(this.deps.secretKey, secret), createdAt: now, retiresAt: null }],
      manifestVersion: null,
      manifestHash: null,
      timeoutMs: DEFAULT_TIMEOUT_MS,
      health: 'UNKNOWN',
      pingFailures: 0,
      lastUsedAt: null,
      createdAt: now,
      updatedAt: now,
    };
    await this.deps.repo.insertApp(app);
    return { ...this.present(app), webhookSecret: secret };
  }

  async list(principal: Principal): Promise<AppView[]> {
    return (await this.deps.repo.appsOf(principal.userId)).map((app) => this.present(app));
  }

  /**
   * Renames, lists or unlists an app, or sets its webhook URL: a new URL is saved only once it answers
   * a signed ping with a pong, as in the console (the ping is on the activity list either way).
   */
  async update(principal: Principal, appId: string, input: { name?: string | undefined; webhookUrl?: string | undefined; public?: boolean | undefined; testMode?: boolean | undefined }): Promise<AppView> {
    const app = await this.owned(principal, appId);
    if (input.public === true && app.unlistedAt) throw AppsErrors.APP_UNLISTED();
    const newUrl = input.webhookUrl !== undefined && input.webhookUrl !== app.webhookUrl ? input.webhookUrl : null;
    const set: Partial<AppDoc> = { updatedAt: this.deps.clock() };
    if (newUrl !== null) {
      const ping = await this.pingCandidate(app, newUrl);
      if (ping.outcome !== 'OK') {
        const why = [ping.failure, ping.detail].filter(Boolean).join(': ') || `status ${ping.status}`;
        throw AppsErrors.WEBHOOK_URL_NOT_ANSWERING({ message: `The new webhook URL did not answer a signed ping with {"type":"pong"} (${why}): the app keeps ${app.webhookUrl}`, details: [{ activityId: ping.id, failure: ping.failure, status: ping.status }] });
      }
      Object.assign(set, { webhookUrl: newUrl, health: 'UP', pingFailures: 0 });
    }
    if (input.name !== undefined) Object.assign(set, { name: input.name, nameWords: wordsOf(input.name) });
    if (input.public !== undefined) set.public = input.public;
    if (input.testMode !== undefined) set.testMode = input.testMode;
    return this.present(must(await this.deps.repo.updateApp(appId, { $set: set }), 'the app just checked'));
  }

  /** A signed ping to a URL the owner wants to use (its form checked first): the ping's activity row. */
  private async pingCandidate(app: AppDoc, webhookUrl: string): Promise<ActivityView> {
    this.assertUrl(webhookUrl);
    return presentActivity(must((await this.deps.webhooks.pingCandidate(app, webhookUrl)).activity, 'a ping\'s activity row'));
  }

  /** Checks a manifest and makes it the app's current version; a version uploaded before must come with the same content. */
  async putManifest(principal: Principal, appId: string, uploaded: unknown): Promise<z.infer<typeof ManifestResultSchema>> {
    await this.owned(principal, appId);
    const manifest = parseManifest(uploaded);
    const hash = manifestHash(uploaded);
    try {
      await this.deps.repo.insertManifest({ _id: `${appId}:${manifest.version}`, appId, version: manifest.version, hash, manifest: JSON.stringify(uploaded), createdAt: this.deps.clock() });
    } catch (error) {
      if (!isDuplicateKey(error)) throw error;
      const earlier = await this.deps.repo.findManifest(appId, manifest.version);
      if (earlier?.hash !== hash) throw AppsErrors.MANIFEST_VERSION_EXISTS();
    }
    await this.deps.repo.updateApp(appId, { $set: { manifestVersion: manifest.version, manifestHash: hash, updatedAt: this.deps.clock() } });
    return { version: manifest.version, manifestHash: hash };
  }

  /**
   * Makes a version uploaded before the current one again (a bad upload rolled back): members who
   * install or move their install from now on get it; installs keep the version they have.
   */
  async makeManifestCurrent(principal: Principal, appId: string, version: string): Promise<z.infer<typeof ManifestResultSchema>> {
    await this.owned(principal, appId);
    const doc = await this.deps.repo.findManifest(appId, version);
    if (!doc) throw AppsErrors.APP_NOT_FOUND({ message: `No manifest version ${version} of this app: see its version history` });
    await this.deps.repo.updateApp(appId, { $set: { manifestVersion: doc.version, manifestHash: doc.hash, updatedAt: this.deps.clock() } });
    return { version: doc.version, manifestHash: doc.hash };
  }

  /** A new secret, shown once; the current one keeps signing for 24 hours, older ones stop. */
  async rotateSecret(principal: Principal, appId: string): Promise<z.infer<typeof WebhookSecretSchema>> {
    const app = await this.owned(principal, appId);
    const now = this.deps.clock();
    const retiresAt = new Date(now.getTime() + ROTATION_OVERLAP_MS);
    const secret = newSecret('whsec_');
    const current = app.secrets.find((s) => s.retiresAt === null);
    const secrets = [{ sealed: sealSecret(this.deps.secretKey, secret), createdAt: now, retiresAt: null }, ...(current ? [{ ...current, retiresAt }] : [])];
    await this.deps.repo.updateApp(appId, { $set: { secrets, updatedAt: now } });
    return { webhookSecret: secret, previousValidUntil: retiresAt.toISOString() };
  }

  async createCredential(principal: Principal, appId: string, kind: CredentialDoc['kind'], roomId: string | null, options: { test?: boolean } = {}): Promise<z.infer<typeof CredentialCreatedSchema>> {
    await this.owned(principal, appId);
    // A room's token for a room the app is in; without a room, the app's token for every room it is in.
    if (kind === 'BOT_TOKEN' && roomId !== null && !(await this.deps.repo.isInRoom(roomId, appId))) throw AppsErrors.APP_NOT_IN_ROOM();
    const id = randomBytes(9).toString('base64url');
    const test = kind === 'PAYMENT_KEY' && options.test === true;
    const prefix = `${CREDENTIAL_PREFIX[kind]}${test ? 'test_' : ''}${id}`;
    const token = newSecret(`${prefix}_`);
    const doc: CredentialDoc = { _id: id, appId, kind, ...(test ? { test: true } : {}), roomId, prefix, hash: tokenHash(token), createdAt: this.deps.clock(), revokedAt: null };
    await this.deps.repo.insertCredential(doc);
    return { ...presentCredential(doc), token };
  }

  async credentials(principal: Principal, appId: string): Promise<CredentialView[]> {
    await this.owned(principal, appId);
    return (await this.deps.repo.liveCredentialsOf(appId)).map(presentCredential);
  }

  async revokeCredential(principal: Principal, appId: string, credentialId: string): Promise<void> {
    await this.owned(principal, appId);
    if (!(await this.deps.repo.revokeCredential(appId, credentialId, this.deps.clock()))) throw AppsErrors.CREDENTIAL_NOT_FOUND();
  }

  /** The credential a presented `bbt_…` or `bpk_…` stands for, compared with its stored hash in constant time; null when none. */
  async verifyCredential(presented: string, kind: CredentialDoc['kind']): Promise<CredentialDoc | null> {
    const match = new RegExp(`^${CREDENTIAL_PREFIX[kind]}(test_)?([A-Za-z0-9_-]{12})_[A-Za-z0-9_-]{43}$`).exec(presented);
    if (!match) return null;
    const doc = await this.deps.repo.findCredential(must(match[2], 'the credential id'));
    if (!doc || doc.kind !== kind || doc.revokedAt !== null || (doc.test === true) !== (match[1] !== undefined)) return null;
    return tokenMatches(presented, doc.hash) ? doc : null;
  }

  /**
   * Room admins add an app to their room: one listed in the directory, or their own. Another
   * member's unlisted app answers as a missing one does, so its existence is not told.
   */
  async addToRoom(principal: Principal, roomId: string, appId: string): Promise<void> {
    const room = await this.deps.rooms.managedRoom(principal, roomId);
    if (room.type === 'E2EE') throw AppsErrors.APP_NOT_FOR_E2EE();
    const app = await this.deps.repo.findApp(appId);
    if (!this.deps.policy.mayAddToRoom(app, principal)) throw AppsErrors.APP_NOT_FOUND({ message: 'No such app' });
    if (await this.deps.repo.addToRoom({ roomId, appId, addedBy: principal.userId, createdAt: this.deps.clock() })) await this.tellRoomEvent('app.added', appId, room);
  }

  /**
   * Tells the app it was added to a room or removed from one (webhook events beyond the
   * specification's payment events, delivered and retried as they are, answered by any 2xx): the
   * room's id (its bot tokens and the bot interface name rooms by it) and type.
   */
  private async tellRoomEvent(type: 'app.added' | 'app.removed', appId: string, room: { _id: string; type: string }): Promise<void> {
    const deliveryId = randomUUID();
    const body = { type, id: `evt_${deliveryId}`, ts: Math.floor(this.deps.clock().getTime() / 1000), app: { id: appId }, room: { id: room._id, type: room.type } };
    await this.deps.webhooks.enqueue(appId, type, body, { retry: true, deliveryId });
  }

  /** Room admins remove an app from their room; its bot tokens for that room stop working. */
  async removeFromRoom(principal: Principal, roomId: string, appId: string): Promise<void> {
    const room = await this.deps.rooms.managedRoom(principal, roomId);
    const removed = await this.deps.repo.removeFromRoom(roomId, appId);
    await this.deps.repo.revokeBotTokens(appId, roomId, this.deps.clock());
    if (removed) await this.tellRoomEvent('app.removed', appId, room);
  }

  /** A site administrator grants an app up to 120 s to reply (5 s otherwise; spec, "Limits"). */
  async grantReplyTime(principal: Principal, appId: string, seconds: number): Promise<AppView> {
    // A member gets the same 401 as for any route they may not use (docs/clients/moderation.md).
    if (!(await this.deps.isSiteAdmin(principal.userId))) throw CommonErrors.UNAUTHORIZED();
    const at = this.deps.clock();
    const app = await this.deps.repo.updateApp(appId, { $set: { timeoutMs: seconds * 1000, updatedAt: at } });
    if (!app) throw AppsErrors.APP_NOT_FOUND({ message: 'No such app' });
    await this.deps.audit.record({ adminId: principal.userId, action: 'GRANT_REPLY_TIME', targetType: 'APP', targetId: appId, reason: `${seconds} s to reply`, at });
    return this.present(app);
  }

  /** What the console shows beside an app: its breaker and how many members installed it. */
  async overview(principal: Principal, appId: string): Promise<AppOverview> {
    return this.withState(await this.owned(principal, appId));
  }

  /** The caller's apps, newest first, each with its breaker and installs. */
  async overviews(principal: Principal): Promise<AppOverview[]> {
    return Promise.all((await this.deps.repo.appsOf(principal.userId)).map((app) => this.withState(app)));
  }

  private async withState(app: AppDoc): Promise<AppOverview> {
    const [openUntil, installs] = await Promise.all([this.deps.webhooks.breakerOpenUntil(app._id), this.deps.countInstalls(app._id)]);
    return { app: this.present(app), breakerOpen: openUntil !== null, breakerOpenUntil: openUntil?.toISOString() ?? null, installs };
  }

  /**
   * The owner deletes the app, once no money is with it (its balance paid out or refunded, no payment
   * open or being paid: 400 APP_HOLDS_MONEY naming what): unlisted and gone for everyone, out of every
   * room, every token and key revoked, its deliveries stopped, members' installs removed and the ids it
   * knew them by forgotten. Its cards stay in the rooms as messages. Each step may repeat: a deletion
   * cut short is finished by deleting again.
   */
  async deleteApp(principal: Principal, appId: string): Promise<void> {
    const app = await this.deps.repo.findAppEvenRemoved(appId);
    if (!app || app.ownerId !== principal.userId) throw AppsErrors.APP_NOT_FOUND();
    const held = await this.deps.moneyWith(appId);
    if (held.length > 0) throw AppsErrors.APP_HOLDS_MONEY({ message: `The app cannot be deleted yet: ${held.join('; ')}`, details: held.map((what) => ({ what })) });
    const now = this.deps.clock();
    await this.deps.forgetInstalls(appId, now);
    await this.deps.repo.removeApp(appId, now);
  }

  /** The owner closes the app's breaker (they fixed what failed): the next call goes through at once. */
  async closeBreaker(principal: Principal, appId: string): Promise<void> {
    await this.owned(principal, appId);
    await this.deps.webhooks.closeBreaker(appId);
  }

  /** Every manifest version uploaded, newest first (the console's version history). */
  async manifestHistory(principal: Principal, appId: string): Promise<{ version: string; hash: string; createdAt: string }[]> {
    await this.owned(principal, appId);
    return (await this.deps.repo.manifestsOf(appId)).map((m) => ({ version: m.version, hash: m.hash, createdAt: m.createdAt.toISOString() }));
  }

  /** One uploaded manifest version as its JSON text (pretty), for the console's editor. */
  async manifestText(principal: Principal, appId: string, version: string): Promise<string> {
    await this.owned(principal, appId);
    const doc = await this.deps.repo.findManifest(appId, version);
    if (!doc) throw AppsErrors.APP_NOT_FOUND({ message: 'No such manifest version' });
    return JSON.stringify(JSON.parse(doc.manifest), null, 2);
  }

  /**
   * The console's way to change the webhook URL: saved only when the new URL answers a signed ping
   * with a pong (as Discord's interactions URL); the ping's activity row either way.
   */
  async saveWebhookUrlAfterPing(principal: Principal, appId: string, webhookUrl: string): Promise<{ saved: boolean; ping: ActivityView }> {
    const app = await this.owned(principal, appId);
    const ping = await this.pingCandidate(app, webhookUrl);
    if (ping.outcome !== 'OK') return { saved: false, ping };
    await this.deps.repo.updateApp(appId, { $set: { webhookUrl, health: 'UP', pingFailures: 0, updatedAt: this.deps.clock() } });
    return { saved: true, ping };
  }

  /** The owner's "send a ping now": the call's activity row. */
  async pingNow(principal: Principal, appId: string): Promise<ActivityView> {
    const app = await this.owned(principal, appId);
    return presentActivity(must((await this.deps.webhooks.ping(app)).activity, 'a ping\'s activity row'));
  }

  /** One row of the app's activity (the console's row page). */
  async activityRow(principal: Principal, appId: string, activityId: string): Promise<ActivityView> {
    await this.owned(principal, appId);
    const row = await this.deps.repo.findActivity(appId, activityId);
    if (!row) throw AppsErrors.APP_NOT_FOUND({ message: 'No such activity row' });
    return presentActivity(row);
  }

  /** Sends a recorded payment-event delivery again, with its original delivery id, through the queue. */
  async replay(principal: Principal, appId: string, activityId: string): Promise<void> {
    await this.owned(principal, appId);
    const activity = await this.deps.repo.findActivity(appId, activityId);
    if (!activity || !activity.event.startsWith('payment.')) throw AppsErrors.NOT_REPLAYABLE();
    if (!(await this.deps.webhooks.replay(appId, activity.deliveryId))) throw AppsErrors.NOT_REPLAYABLE({ message: 'This delivery is still being tried, or was not queued' });
  }

  /** The activity list as CSV (RFC 4180: a header row, CRLF, fields quoted when they need it), newest first, read in a stream. */
  async activityCsv(principal: Principal, appId: string): Promise<AsyncIterable<string>> {
    await this.owned(principal, appId);
    const cursor = this.deps.repo.activityStream(appId);
    return (async function* () {
      yield `${CSV_COLUMNS.join(',')}\r\n`;
      for await (const doc of cursor) {
        const row = presentActivity(doc);
        yield `${CSV_COLUMNS.map((column) => csvField(column === 'test' ? String(row.test) : row[column])).join(',')}\r\n`;
      }
    })();
  }

  async activity(principal: Principal, appId: string, pageSize: number, currentPage: number, filter: ActivityFilter = {}): Promise<Page<ActivityView>> {
    await this.owned(principal, appId);
    const { items, total } = await this.deps.repo.pageOfActivity(appId, pageSize, currentPage, filter);
    return page(items.map(presentActivity), total, pageSize, currentPage);
  }
}
