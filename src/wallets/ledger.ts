import type { Clock } from '../platform/clock.js';
import type { Logger } from '../platform/logger.js';
import { fromStored, toStored, type Currency } from './money.js';
import type { AccountDoc, JournalDoc, JournalKind, LedgerRepo } from './ledger.repo.js';
import { WalletsErrors } from './wallets.errors.js';
import { must } from '../platform/must.js';
import { GroupWriter, type Waiter } from '../platform/group-writer.js';
import type { AfterAnswer } from '../platform/after-answer.js';

export interface EntryRequest {
  /** The operation's unique key: the same key posts once, whatever happens. */
  id: string;
  kind: JournalKind;
  currency: Currency;
  amount: bigint;
  debit: string;
  credit: string;
  fingerprint: string;
  memo: JournalDoc['memo'];
}

/** An entry the debited account could not pay for: recorded as FAILED, nothing moved. */
export class InsufficientFunds extends Error {}

/** The credited wallet was closed (its owner deleted their account): the entry is FAILED and its debit given back. */
export class AccountClosed extends Error {}

/** The failure of an entry refused for a closed credited account. */
const ACCOUNT_CLOSED = 'ACCOUNT_CLOSED';

/**
 * How long an entry may stay between steps before the reconciler finishes it (it takes entries whose
 * `updatedAt` is older). A step applied within a third of this after the entry was written or last
 * moved cannot meet an entry the reconciler finished (allowing clocks 20 s apart), so only a slower
 * step looks whether it did.
 */
export const LEDGER_GRACE_MS = 30_000;

/** System accounts: the chain (the world outside), money on its way out, the house's liquidity, fees earned. */
export type SystemAccount = 'chain' | 'outgoing' | 'house' | 'fees';
export const systemAccountId = (name: SystemAccount, currency: Currency) => `system:${name}:${currency}`;

/**
 * The double-entry ledger. An entry is written first (its `_id` the operation's key, so it exists
 * once), then applied in steps that each change one document and can each be repeated: the debit
 * (conditional on the available balance, unless the account stands for the outside world), the
 * credit, APPLIED (the money has moved: the entry is in both accounts' histories, and nothing undoes
 * it), the clearing of the in-flight marks, DONE. A crash between steps leaves the entry PENDING or
 * APPLIED, and `advance` (the reconciler's) finishes it: no step runs twice, none is lost, and money
 * is never created or destroyed.
 */
export class Ledger {
  constructor(
    private readonly deps: {
      repo: LedgerRepo;
      clock: Clock;
      logger: Logger;
    },
  ) {}

  /**
   * Posts an entry, or returns the entry already posted under its key: DONE, or APPLIED when told what
   * to finish after (see `postAll`). Throws InsufficientFunds when refused.
   */
  post(request: EntryRequest, options: PostOptions = {}): Promise<JournalDoc> {
    return must(this.postAll([request], options)[0], 'the posted entry');
  }

  /**
   * Posts entries in the given order, in one group (see `writeGroup`): each promise is its entry's
   * outcome, as `post` gives it. Entries posted while a group is being written wait and go together in
   * the next one (GroupWriter), so under load many entries share each write and alone one goes at once.
   * One group at a time: a second writer in parallel was measured (bench:wallets) to halve the groups
   * and double the ledger's commands per entry without more transfers a second.
   *
   * With `options.afterAnswer` (an HTTP answer's end) an entry is answered once it is APPLIED: the
   * money has moved and shows in both histories. Its bookkeeping (the marks cleared, DONE) is handed
   * to `afterAnswer` and goes to the database with other entries' (`finishing`); a crash first leaves
   * it APPLIED, and the reconciler finishes it. Without, it is answered DONE.
   */
  postAll(requests: EntryRequest[], { afterAnswer }: PostOptions = {}): Promise<JournalDoc>[] {
    return this.groups.addAll(requests.map((request) => ({ request, afterAnswer })));
  }

  private readonly groups = new GroupWriter<Posting, JournalDoc>((group) => this.writeGroup(group), GROUP_LIMIT);

  /** Entries APPLIED and answered, their marks cleared and DONE set for many at once: two commands a group. */
  private readonly finishing = new GroupWriter<JournalDoc, void>(async (group) => {
    const entries = group.map(({ item }) => item);
    try {
      await this.markDone(entries, this.deps.clock());
    } catch (error) {
      this.deps.logger.warn({ err: error, entries: entries.length }, 'ledger: applied entries left APPLIED; the reconciler finishes them');
    }
    for (const { resolve } of group) resolve();
  }, GROUP_LIMIT);

  /** Groups this process wrote and the entries they held since it started (`/metrics`: entries per group under load). */
  get written(): { groups: number; entries: number } {
    return { groups: this.groups.written.groups, entries: this.groups.written.items };
  }

  /**
   * Writes a group of new entries with one database command per step for all of them, the steps in the
   * order `advance` takes them for one: the entries, every debit (in order, each conditional on what is
   * available then, as one ordered write), every credit, APPLIED; then the marks cleared and DONE after
   * the answers (`finishing`).
   * Each entry keeps its own outcome: an entry whose key was taken is answered from the first
   * (`repeat`), one whose debit could not be paid is FAILED. A step that is not the expected
   * count (a concurrent reconciler, an account gone) or a group that took longer than a third of the
   * grace hands the entries concerned to `advance` one by one, which decides each from the database.
   * Never throws: every waiting promise is settled.
   */
  private async writeGroup(group: Waiting[]): Promise<void> {
    const { repo, clock } = this.deps;
    const started = clock();
    const fresh: Pending[] = [];
    try {
      const entries = group.map(({ item }) => newEntry(item.request, started));
      const taken = await repo.insertEntries(entries);
      group.forEach((waiting, i) => {
        if (taken.has(i)) void this.repeat(waiting.item.request).then(waiting.resolve, waiting.reject);
        else fresh.push({ waiting, entry: must(entries[i], 'the entry') });
      });
    } catch (error) {
      for (const { reject } of group) reject(error);
      return;
    }
    try {
      await this.applyGroup(fresh, started);
    } catch (error) {
      // Left between steps: the reconciler finishes them.
      for (const { waiting } of fresh) waiting.reject(error);
    }
  }

  private async applyGroup(fresh: Pending[], started: Date): Promise<void> {
    const { repo, clock } = this.deps;
    const slow = () => clock().getTime() - started.getTime() >= LEDGER_GRACE_MS / 3;
    const debits = await repo.applyDebits(fresh.map(({ entry }) => entry), clock());
    if (slow()) return this.finishOneByOne(fresh);
    const debited = debits === fresh.length ? fresh : await this.carrying(fresh, (entry) => entry.debit);
    const refused = fresh.filter((one) => !debited.includes(one));
    const credits = await repo.applyCredits(debited.map(({ entry }) => entry), clock());
    if (slow()) return this.finishOneByOne(fresh);
    const credited = credits === debited.length ? debited : await this.carrying(debited, (entry) => entry.credit);
    for (const { waiting, entry } of debited.filter((one) => !credited.includes(one))) {
      const closedOut = await this.refuseForClosedCredit(entry);
      if (closedOut) settle(waiting, closedOut);
      // The credited account is gone or of another currency: the entry stays PENDING and the reconciler reports it.
      else waiting.reject(new Error(`ledger: cannot credit ${entry.credit} for ${entry._id}`));
    }
    const failedAt = clock();
    if (refused.length > 0) {
      const failed = await repo.setStates(ids(refused), ['PENDING'], 'FAILED', failedAt, { failure: 'INSUFFICIENT_FUNDS' });
      if (failed !== refused.length) await this.finishOneByOne(refused);
      else for (const { waiting, entry } of refused) settle(waiting, { ...entry, state: 'FAILED', failure: 'INSUFFICIENT_FUNDS', updatedAt: failedAt });
    }
    if (credited.length === 0) return;
    const appliedAt = clock();
    if ((await repo.setStates(ids(credited), ['PENDING', 'APPLIED'], 'APPLIED', appliedAt)) !== credited.length) return this.finishOneByOne(credited);
    // Entries answered at APPLIED are finished after their answer, those of one answer together.
    const byAnswer = new Map<AfterAnswer, JournalDoc[]>();
    const finishNow: Pending[] = [];
    for (const one of credited) {
      const { afterAnswer } = one.waiting.item;
      if (!afterAnswer) {
        finishNow.push(one);
        continue;
      }
      one.waiting.resolve({ ...one.entry, state: 'APPLIED', updatedAt: appliedAt });
      const answered = byAnswer.get(afterAnswer);
      if (answered) answered.push(one.entry);
      else byAnswer.set(afterAnswer, [one.entry]);
    }
    for (const [afterAnswer, entries] of byAnswer) afterAnswer(() => void Promise.all(this.finishing.addAll(entries)));
    if (finishNow.length === 0) return;
    const doneAt = clock();
    if ((await this.markDone(finishNow.map(({ entry }) => entry), doneAt)) !== finishNow.length) return this.finishOneByOne(finishNow);
    for (const { waiting, entry } of finishNow) waiting.resolve({ ...entry, state: 'DONE', updatedAt: doneAt });
  }

  /** The last two steps for APPLIED entries, for all at once: their marks cleared, then DONE; how many moved to DONE. */
  private async markDone(entries: JournalDoc[], at: Date): Promise<number> {
    await this.deps.repo.clearMarksOf(entries);
    return this.deps.repo.setStates(entries.map((entry) => entry._id), ['APPLIED'], 'DONE', at);
  }

  /** The entries whose mark the account `accountOf` names carries (the step applied to them). */
  private async carrying(pending: Pending[], accountOf: (entry: JournalDoc) => string): Promise<Pending[]> {
    const marks = await this.deps.repo.marksOn(pending.map(({ entry }) => accountOf(entry)));
    return pending.filter(({ entry }) => marks.get(accountOf(entry))?.has(entry._id) === true);
  }

  /**
   * The careful way for entries whose group met the unexpected: each is read again and taken on by
   * `advance`. A step the group applied after the reconciler finished the entry, DONE or FAILED (the
   * group stalled past the grace), is a stray and is taken back first.
   */
  private async finishOneByOne(pending: Pending[]): Promise<void> {
    await Promise.all(
      pending.map(async ({ waiting, entry }) => {
        try {
          const current = must(await this.deps.repo.findEntry(entry._id), 'the entry being applied');
          if (current.state === 'DONE' || current.state === 'FAILED') {
            await this.reverseStray(entry._id, entry.debit, fromStored(entry.amount));
            await this.reverseStray(entry._id, entry.credit, -fromStored(entry.amount));
          }
          settle(waiting, await this.advance(current));
        } catch (error) {
          waiting.reject(error);
        }
      }),
    );
  }

  /** An entry whose key was taken: only the one that wrote it (or, later, the reconciler) applies it; a repeat waits for its end. */
  private async repeat(request: EntryRequest): Promise<JournalDoc> {
    const existing = must(await this.deps.repo.findEntry(request.id), 'the entry under this key');
    if (existing.fingerprint !== request.fingerprint) throw WalletsErrors.REQUEST_ID_REUSED();
    return this.outcome(await this.awaitEnd(existing));
  }

  private outcome(entry: JournalDoc): JournalDoc {
    if (entry.state === 'FAILED') throw new InsufficientFunds(entry.failure ?? 'insufficient funds');
    return entry;
  }

  entry(id: string): Promise<JournalDoc | null> {
    return this.deps.repo.findEntry(id);
  }

  /**
   * Tries an entry that failed for want of funds once more (a pending swap the house can now fill).
   * Only the caller whose reset took effect applies it; null when it was not FAILED.
   */
  async retryFailed(id: string): Promise<JournalDoc | null> {
    const reset = await this.deps.repo.setState(id, ['FAILED'], 'PENDING', this.deps.clock(), { failure: null });
    return reset ? this.advance(reset) : null;
  }

  /** The entry once it is decided (APPLIED, DONE or FAILED), or as it stands after `ms` (still being applied). */
  async awaitEnd(entry: JournalDoc, ms = 10_000): Promise<JournalDoc> {
    const deadline = Date.now() + ms;
    let current = entry;
    while (current.state === 'PENDING' && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      current = (await this.deps.repo.findEntry(entry._id)) ?? current;
    }
    return current;
  }

  /** Takes an entry as far as it goes: DONE, or FAILED when its debit could not be paid. Each step may repeat. */
  async advance(entry: JournalDoc): Promise<JournalDoc> {
    const { repo } = this.deps;
    let current = entry;
    if (current.state === 'PENDING') {
      if (!(await this.applyDebit(current))) {
        const failed = await repo.setState(current._id, ['PENDING'], 'FAILED', this.deps.clock(), { failure: 'INSUFFICIENT_FUNDS' });
        return failed ?? must(await repo.findEntry(current._id), 'the entry being applied');
      }
      const refused = await this.applyCredit(current);
      if (refused) return refused;
      current = (await repo.setState(current._id, ['PENDING', 'APPLIED'], 'APPLIED', this.deps.clock())) ?? current;
    }
    if (current.state === 'APPLIED') {
      await repo.clearMarks(current);
      current = (await repo.setState(current._id, ['APPLIED'], 'DONE', this.deps.clock())) ?? must(await repo.findEntry(current._id), 'the entry being applied');
    }
    return current;
  }

  /** The debit: once (the entry's mark), and only from what is available unless the account may overdraw. */
  private async applyDebit(entry: JournalDoc): Promise<boolean> {
    const { repo } = this.deps;
    if (await repo.applyDebit(entry, this.deps.clock())) return !(await this.undoIfFinished(entry, entry.debit, fromStored(entry.amount)));
    // Not applied now: applied before (a repeat), or refused.
    return repo.hasMark(entry.debit, entry._id);
  }

  /** The credit, once; the entry as FAILED when the credited wallet is closed (its debit given back). */
  private async applyCredit(entry: JournalDoc): Promise<JournalDoc | null> {
    const { repo } = this.deps;
    if (await repo.applyCredit(entry, this.deps.clock())) {
      await this.undoIfFinished(entry, entry.credit, -fromStored(entry.amount));
      return null;
    }
    if (await repo.hasMark(entry.credit, entry._id)) return null;
    const refused = await this.refuseForClosedCredit(entry);
    if (refused) return refused;
    // The credited account is gone or of another currency: the entry stays PENDING and the reconciler reports it.
    throw new Error(`ledger: cannot credit ${entry.credit} for ${entry._id}`);
  }

  /**
   * An entry whose credit cannot apply because the credited wallet was closed (a deletion raced the
   * transfer): its debit is given back (conditional on its mark, so once) and the entry is FAILED.
   * Null when the account is not closed.
   */
  private async refuseForClosedCredit(entry: JournalDoc): Promise<JournalDoc | null> {
    const { repo, clock } = this.deps;
    if (!(await repo.isClosed(entry.credit))) return null;
    await repo.reverseMarked(entry.debit, entry._id, fromStored(entry.amount));
    const failed = await repo.setState(entry._id, ['PENDING'], 'FAILED', clock(), { failure: ACCOUNT_CLOSED });
    return failed ?? must(await repo.findEntry(entry._id), 'the refused entry');
  }

  /**
   * A step applied by a process that stalled past the reconciler's grace while the reconciler finished
   * the entry: its mark sits on an entry that is DONE, or FAILED (the reconciler found the balance short
   * then), and a finished entry has no marks left. Such a step is reversed, once (the reversal takes
   * the mark away with it). True when it was.
   */
  private async undoIfFinished(entry: JournalDoc, accountId: string, applied: bigint): Promise<boolean> {
    if (this.deps.clock().getTime() - entry.updatedAt.getTime() < LEDGER_GRACE_MS / 3) return false;
    if (!(await this.deps.repo.isFinished(entry._id))) return false;
    await this.reverseStray(entry._id, accountId, applied);
    return true;
  }

  /** Takes back a stray application of an entry to an account (see undoIfFinished): conditional on its mark. */
  async reverseStray(entryId: string, accountId: string, applied: bigint): Promise<void> {
    if (await this.deps.repo.reverseMarked(accountId, entryId, applied)) this.deps.logger.warn({ entryId, accountId }, 'reversed a ledger step applied after its entry was finished');
  }

  /** Accounts this process made or found made: accounts are never deleted, so each is made once. */
  private readonly ensured = new Set<string>();

  private async ensure(account: AccountDoc): Promise<string> {
    if (!this.ensured.has(account._id)) {
      await this.deps.repo.ensureAccount(account);
      this.ensured.add(account._id);
    }
    return account._id;
  }

  /** An app's balance in a currency (what members paid it), made on first use; never below zero. */
  async ensureAppAccount(appId: string, currency: Currency): Promise<string> {
    const id = `app:${appId}:${currency}`;
    const now = this.deps.clock();
    return this.ensure({ _id: id, kind: 'APP', currency, userId: null, name: appId, available: toStored(0n), held: toStored(0n), pending: [], overdraft: false, createdAt: now, updatedAt: now });
  }

  /** Makes a system account on first use. */
  async ensureSystemAccount(name: SystemAccount, currency: Currency): Promise<string> {
    const id = systemAccountId(name, currency);
    const now = this.deps.clock();
    const account: AccountDoc = {
      _id: id,
      kind: 'SYSTEM',
      currency,
      userId: null,
      name,
      available: toStored(0n),
      held: toStored(0n),
      pending: [],
      overdraft: name === 'chain',
      createdAt: now,
      updatedAt: now,
    };
    return this.ensure(account);
  }
}

/** Entries written together at most: `$in` lists stay short (mongo-java-server matches them in quadratic time). */
const GROUP_LIMIT = 64;

export interface PostOptions {
  /** Where the entry's bookkeeping after APPLIED goes, once it is answered then (see `postAll`). */
  afterAnswer?: AfterAnswer | undefined;
}

/** An entry to post, and where its bookkeeping goes if it is answered APPLIED. */
interface Posting {
  request: EntryRequest;
  afterAnswer: AfterAnswer | undefined;
}

type Waiting = Waiter<Posting, JournalDoc>;

/** A new entry of a group, and who waits for it. */
interface Pending {
  waiting: Waiting;
  entry: JournalDoc;
}

/** Answers the one waiting for an entry with its outcome: a FAILED entry is InsufficientFunds, as `post` throws it. */
function settle(waiting: Waiting, entry: JournalDoc): void {
  if (entry.state === 'FAILED') waiting.reject(entry.failure === ACCOUNT_CLOSED ? new AccountClosed(entry.failure) : new InsufficientFunds(entry.failure ?? 'insufficient funds'));
  else waiting.resolve(entry);
}

const ids = (pending: Pending[]) => pending.map(({ entry }) => entry._id);

function newEntry(request: EntryRequest, at: Date): JournalDoc {
  return {
    _id: request.id,
    kind: request.kind,
    currency: request.currency,
    amount: toStored(request.amount),
    debit: request.debit,
    credit: request.credit,
    state: 'PENDING',
    fingerprint: request.fingerprint,
    memo: request.memo,
    failure: null,
    createdAt: at,
    updatedAt: at,
  };
}
