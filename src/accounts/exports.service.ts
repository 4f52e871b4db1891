import { randomUUID } from 'node:crypto';
import { mkdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import type { Clock } from '../platform/clock.js';
import type { DeviceEvents } from '../platform/device-events.js';
import type { Logger } from '../platform/logger.js';
import type { Principal } from '../platform/principal.js';
import type { BlobStorage } from '../platform/storage/storage.js';
import { ZipWriter } from '../platform/zip-writer.js';
import { cleanFileName } from '../attachments/index.js';
import { AccountsErrors } from './accounts.errors.js';
import type { AccountExportDoc, AccountExportsRepo } from './accounts.repo.js';

/** One data export a day per user; an archive is kept this long. */
const EXPORT_EVERY_MS = 24 * 3_600_000;
const EXPORT_KEPT_MS = 7 * 24 * 3_600_000;

/** An uploaded file the export copies into the archive: its record and where its bytes are. */
export interface ExportedFile {
  id: string;
  filename: string;
  storageKey: string;
  [field: string]: unknown;
}

export interface ExportsDeps {
  repo: AccountExportsRepo;
  /** Each area's part of the user's data, by the JSON file it goes to (profile.json, …). */
  parts: Record<string, (userId: string) => Promise<unknown>>;
  files: (userId: string) => Promise<ExportedFile[]>;
  storage: () => BlobStorage;
  tickets: { sign(exportId: string, ttlSeconds: number): Promise<string>; verify(ticket: string): Promise<{ exportId: string }> };
  ticketTtlSeconds: number;
  publicBaseUrl: string;
  stagingDir: string;
  enqueue: (exportId: string) => Promise<void>;
  events: Pick<DeviceEvents, 'toUsers'>;
  clock: Clock;
  logger: Logger;
}

const README = `Your data, as the service keeps it (docs/clients/people.md, "Exporting your data", says what each
field means). Every file is JSON:

profile.json      your profile and settings
devices.json      the devices you signed in on (never a token)
contacts.json     your connections, connection requests and blocks (other people by id)
rooms.json        the rooms you are or were a member of, and your role there
messages.json     every message you wrote (ciphertext in end-to-end encrypted rooms)
attachments.json  the files you uploaded; attachments/ holds each one
wallets.json      your wallets with their history
apps.json         the apps you made and the apps you installed
`;

/**
 * Exporting one's data (GDPR Art. 20): a ZIP of JSON files, one per area, and the files the user
 * uploaded, built by the worker; the user's devices are told with a short-lived link. One a day;
 * archives are deleted after 7 days.
 */
export class ExportsService {
  constructor(private readonly deps: ExportsDeps) {}

  async request(principal: Principal): Promise<AccountExportDoc> {
    const { repo, clock } = this.deps;
    const now = clock();
    const latest = await repo.latestOf(principal.userId);
    if (latest && now.getTime() - latest.createdAt.getTime() < EXPORT_EVERY_MS) {
      throw AccountsErrors.EXPORT_TOO_SOON({ retryAfter: (latest.createdAt.getTime() + EXPORT_EVERY_MS - now.getTime()) / 1000 });
    }
    const doc: AccountExportDoc = { _id: randomUUID(), userId: principal.userId, state: 'QUEUED', storageKey: null, size: null, createdAt: now, readyAt: null };
    await repo.insert(doc);
    await this.deps.enqueue(doc._id);
    return doc;
  }

  /** The caller's export, with a fresh link while its archive is ready. */
  async get(principal: Principal, exportId: string): Promise<{ doc: AccountExportDoc; link: { url: string; expiresAt: string } | null }> {
    const doc = await this.deps.repo.find(exportId);
    if (!doc || doc.userId !== principal.userId) throw AccountsErrors.EXPORT_NOT_FOUND();
    return { doc, link: doc.state === 'READY' ? await this.link(doc._id) : null };
  }

  private async link(exportId: string): Promise<{ url: string; expiresAt: string }> {
    const ttl = this.deps.ticketTtlSeconds;
    const ticket = await this.deps.tickets.sign(exportId, ttl);
    return { url: `${this.deps.publicBaseUrl}/exports/${ticket}`, expiresAt: new Date(this.deps.clock().getTime() + ttl * 1000).toISOString() };
  }

  /** What a link opens: that archive only, while the link lives. */
  async open(ticket: string): Promise<{ body: Readable; size: number; filename: string }> {
    const { exportId } = await this.deps.tickets.verify(ticket).catch(() => {
      throw AccountsErrors.EXPORT_LINK_INVALID();
    });
    const doc = await this.deps.repo.find(exportId);
    if (!doc || doc.state !== 'READY' || !doc.storageKey) throw AccountsErrors.EXPORT_LINK_INVALID();
    return { body: await this.deps.storage().read(doc.storageKey), size: doc.size ?? 0, filename: `export-${doc.createdAt.toISOString().slice(0, 10)}.zip` };
  }

  /** Builds the archive (the worker's job): every area's part, then the files; stores it; tells the devices. */
  async build(exportId: string): Promise<void> {
    const { repo, clock, storage } = this.deps;
    const doc = await repo.find(exportId);
    if (!doc || doc.state !== 'QUEUED') return;
    await mkdir(this.deps.stagingDir, { recursive: true });
    const archive = path.join(this.deps.stagingDir, `export-${exportId}.zip`);
    const scratch = path.join(this.deps.stagingDir, `export-${exportId}-file`);
    const zip = await ZipWriter.create(archive, clock());
    try {
      await zip.addBuffer('README.txt', Buffer.from(README));
      for (const [file, part] of Object.entries(this.deps.parts)) await zip.addBuffer(file, Buffer.from(JSON.stringify(await part(doc.userId), null, 2)));
      const files = await this.deps.files(doc.userId);
      await zip.addBuffer('attachments.json', Buffer.from(JSON.stringify(files.map(({ storageKey: _key, ...shown }) => shown), null, 2)));
      for (const file of files) {
        const copied = await storage().download(file.storageKey, scratch).then(() => true, () => false);
        if (copied) await zip.addFile(`attachments/${file.id}/${cleanFileName(file.filename).replace(/[/\\]/g, '_')}`, scratch);
      }
      await zip.close();
    } catch (error) {
      await zip.abandon().catch(() => undefined);
      await rm(archive, { force: true });
      throw error;
    } finally {
      await rm(scratch, { force: true });
    }
    const key = `exports/${doc.userId}/${exportId}.zip`;
    const bytes = (await stat(archive)).size;
    await storage().putFile(key, archive, 'application/zip');
    await rm(archive, { force: true });
    if (!(await repo.ready(exportId, key, bytes, clock()))) return;
    const link = await this.link(exportId);
    await this.deps.events.toUsers([doc.userId], 'account.export-ready', { exportId, url: link.url, expiresAt: link.expiresAt });
    this.deps.logger.info({ exportId, bytes }, 'data export ready');
  }

  /** Archives older than 7 days deleted, with their records; how many. */
  async sweep(): Promise<number> {
    const old = await this.deps.repo.olderThan(new Date(this.deps.clock().getTime() - EXPORT_KEPT_MS), 100);
    for (const doc of old) await this.remove(doc);
    return old.length;
  }

  /** Every export of a user removed (their account was deleted). */
  async forgetUser(userId: string): Promise<void> {
    for (const doc of await this.deps.repo.ofUser(userId)) await this.remove(doc);
  }

  private async remove(doc: AccountExportDoc): Promise<void> {
    if (doc.storageKey) await this.deps.storage().delete(doc.storageKey).catch(() => undefined);
    await this.deps.repo.remove(doc._id);
  }
}
