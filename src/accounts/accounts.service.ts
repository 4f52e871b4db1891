import type { Clock } from '../platform/clock.js';
import { newSmsCode, type CodeHasher } from '../platform/code-hash.js';
import { CommonErrors } from '../platform/common.errors.js';
import type { CrashAt } from '../platform/crash-points.js';
import type { EphemeralStore } from '../platform/ephemeral.js';
import type { Logger } from '../platform/logger.js';
import type { Principal } from '../platform/principal.js';
import type { SmsProvider } from '../platform/sms/sms.js';
import type { SmsGuard } from '../platform/sms/sms-guard.js';
import type { UserAccountStates } from '../users/index.js';
import { AccountsErrors } from './accounts.errors.js';
import { ERASE_STEPS, type AccountDeletionsRepo, type EraseStep } from './accounts.repo.js';

/** How long a deletion code lives, and how many wrong entries it takes. */
const CODE_TTL_SECONDS = 600;
/** A deletion left ERASING this long without a step is finished by the sweep. */
const STALLED_AFTER_MS = 60_000;

export interface AccountsDeps {
  repo: AccountDeletionsRepo;
  users: UserAccountStates;
  /** Checks the authenticator code when two-factor is on (the users area). */
  confirmWithTwoFactor: (userId: string, code: string | undefined) => Promise<void>;
  removeAvatarOf: (userId: string) => Promise<void>;
  /** The user's data exports (archives and records) removed. */
  forgetExports: (userId: string) => Promise<void>;
  devices: { revokeAllOf(userId: string): Promise<void>; eraseOf(userId: string): Promise<void>; forgetListOf(userId: string): Promise<void>; allIdsOf(userId: string): Promise<string[]> };
  forgetContacts: (userId: string) => Promise<void>;
  forgetMemberships: (userId: string) => Promise<void>;
  forgetKeys: (userId: string, deviceIds: string[]) => Promise<void>;
  apps: { blockers(userId: string): Promise<string[]>; forget(userId: string): Promise<void> };
  wallets: { blockers(userId: string): Promise<string[]>; close(userId: string): Promise<string[]>; reopen(userId: string): Promise<void> };
  forgetAuthor: (userId: string) => Promise<void>;
  /** The sign-in codes sent to the account's number; its read marks; the comments of its reports. */
  forgetPhone: (phone: string) => Promise<void>;
  forgetReader: (userId: string) => Promise<void>;
  flushPendingMarks: () => Promise<void>;
  forgetReporter: (userId: string) => Promise<void>;
  forgetUploads: (userId: string) => Promise<void>;
  enqueueErase: (userId: string) => Promise<void>;
  sms: SmsProvider;
  smsGuard: Pick<SmsGuard, 'check'>;
  codes: CodeHasher;
  ephemeral: EphemeralStore;
  keys: { deletionCode(userId: string): string; deletionWrong(userId: string): string; codeRequests(phone: string): string };
  limits: { codesPerWindow: number; windowSeconds: number; maxWrong: number };
  appName: string;
  crashAt: CrashAt;
  clock: Clock;
  logger: Logger;
}

/**
 * Deleting an account from the app (docs/clients/people.md, "Deleting an account"): confirmed by a
 * code texted to the account's number (and the authenticator code when two-factor is on), refused
 * while money is in it or on its way. At once the number is free and every device signed out; then
 * the account is erased step by step in the worker (`erase`), each step repeatable, so a process that
 * dies midway is finished by the sweep and never leaves half an account.
 */
export class AccountsService {
  constructor(private readonly deps: AccountsDeps) {}

  /** Texts a six-digit code to the account's number, as sign-in codes are (the same budgets). */
  async sendDeletionCode(principal: Principal): Promise<void> {
    const { deps } = this;
    const user = await deps.users.findById(principal.userId);
    if (!user || user.deletedAt) throw CommonErrors.UNAUTHORIZED();
    deps.smsGuard.check(user.phone);
    const limit = await deps.ephemeral.hit(deps.keys.codeRequests(user.phone), deps.limits.codesPerWindow, deps.limits.windowSeconds);
    if (!limit.allowed) throw CommonErrors.TOO_MANY_CODES({ retryAfter: limit.retryAfter });
    const code = newSmsCode();
    await deps.ephemeral.put(deps.keys.deletionCode(user._id), await deps.codes.hash(code), CODE_TTL_SECONDS);
    await deps.sms.send({ to: user.phone, text: `${code} is your ${deps.appName} code to DELETE your account. Ignore it if you did not ask.`, code });
  }

  /**
   * Deletes the caller's account: what stops it first (money), then the texted code (used once) and
   * the authenticator code; then the number freed and every device signed out at once, and the rest
   * erased in the background.
   */
  async delete(principal: Principal, input: { code: string; twoFactorCode?: string | undefined; eraseMessages: boolean }): Promise<void> {
    const { deps } = this;
    const userId = principal.userId;
    const user = await deps.users.findById(userId);
    if (!user || user.deletedAt) throw CommonErrors.UNAUTHORIZED();
    await this.refuseWhileMoneyIsThere(() => Promise.all([deps.wallets.blockers(userId), deps.apps.blockers(userId)]).then((found) => found.flat()));
    const codeHash = await this.checkCode(userId, input.code);
    await deps.confirmWithTwoFactor(userId, input.twoFactorCode);
    // Used once, and only now that every refusal before it has passed (a wrong authenticator code
    // leaves the texted code to try again with).
    const codeKey = deps.keys.deletionCode(userId);
    if (!(await deps.ephemeral.remove(codeKey))) throw AccountsErrors.DELETION_CODE_INVALID();
    // Recorded before anything is done (a crash from here on is finished or undone by the sweep). The
    // wallets close only if nothing moved since they were read; money that arrived meanwhile refuses,
    // gives the record up and the code back: it was not the code's fault.
    await deps.repo.begin(userId, input.eraseMessages, deps.clock());
    deps.crashAt('account.delete-recorded');
    // The account's read marks this process still holds to write together (a post a moment ago) go
    // now, so that the erasure finds them; another node's lingering ones are taken by the last step.
    await deps.flushPendingMarks();
    await this.refuseWhileMoneyIsThere(() => deps.wallets.close(userId)).catch(async (error: unknown) => {
      await deps.repo.abandon(userId);
      await deps.ephemeral.put(codeKey, codeHash, CODE_TTL_SECONDS);
      throw error;
    });
    deps.crashAt('account.wallets-closed');
    await this.beginErasing(userId);
    await deps.enqueueErase(userId);
  }

  /** The wallets closed: the deletion moves on, and the account and its devices go at once (the rest in the background). */
  private async beginErasing(userId: string): Promise<void> {
    await this.deps.repo.walletsClosed(userId, this.deps.clock());
    await this.run(userId, 'account');
    await this.run(userId, 'devices');
  }

  private async refuseWhileMoneyIsThere(find: () => Promise<string[]>): Promise<void> {
    const blockers = await find();
    if (blockers.length > 0) {
      throw AccountsErrors.ACCOUNT_HOLDS_MONEY({ message: `The account cannot be deleted yet: ${blockers.join('; ')}`, details: blockers.map((reason) => ({ reason })) });
    }
  }

  /**
   * Checks the texted code (the caller uses it up once every refusal has passed); wrong entries are
   * counted, and past the allowance the code is gone. Its stored hash.
   */
  private async checkCode(userId: string, code: string): Promise<string> {
    const { ephemeral, keys, codes, limits } = this.deps;
    const retryAfter = await ephemeral.exhausted(keys.deletionWrong(userId), limits.maxWrong);
    if (retryAfter !== null) throw CommonErrors.TOO_MANY_CODES({ message: 'Too many wrong codes; request a new one later', retryAfter });
    const hash = await ephemeral.get(keys.deletionCode(userId));
    if (hash && (await codes.verify(hash, code))) return hash;
    const wrong = await ephemeral.hit(keys.deletionWrong(userId), limits.maxWrong, CODE_TTL_SECONDS);
    if (!wrong.allowed) await ephemeral.remove(keys.deletionCode(userId));
    throw AccountsErrors.DELETION_CODE_INVALID();
  }

  /** Runs every step of the deletion not done yet, in order (the worker's job, and the sweep's). */
  async erase(userId: string): Promise<void> {
    const deletion = await this.deps.repo.find(userId);
    // CLOSING: the wallets' step did not end (a crash); the sweep settles it first.
    if (!deletion || deletion.state !== 'ERASING') return;
    for (const step of ERASE_STEPS) {
      if (deletion.done.includes(step)) continue;
      await this.run(userId, step, deletion.eraseMessages);
      this.deps.crashAt('account.erase-step');
    }
    await this.deps.repo.finish(userId, this.deps.clock());
    this.deps.logger.info({ userId }, 'account erased');
  }

  /** Deletions a dead process left midway, finished; how many. */
  async sweep(): Promise<number> {
    const stalled = await this.deps.repo.stalled(new Date(this.deps.clock().getTime() - STALLED_AFTER_MS), 20);
    for (const deletion of stalled) {
      if (deletion.state === 'CLOSING') await this.settleClosing(deletion._id);
      else await this.erase(deletion._id);
    }
    return stalled.length;
  }

  /**
   * A deletion a crash left while its wallets were closing (recorded, nothing erased): finished when
   * the wallets close now (the member confirmed it with their code), given up when money is there
   * (the wallets reopened, the record gone: the account lives on, as a refused deletion leaves it).
   */
  private async settleClosing(userId: string): Promise<void> {
    const { deps } = this;
    const blockers = await deps.wallets.close(userId);
    if (blockers.length > 0) {
      await deps.wallets.reopen(userId);
      await deps.repo.abandon(userId);
      deps.logger.warn({ userId, blockers }, 'an account deletion a crash left before its erasure was given up: money is in its wallets');
      return;
    }
    await this.beginErasing(userId);
    await this.erase(userId);
  }

  private async run(userId: string, step: EraseStep, eraseMessages = false): Promise<void> {
    const { deps } = this;
    switch (step) {
      case 'account': {
        // The number's sign-in codes go before the number itself (a repeat finds it gone: the codes expire within minutes anyway).
        const user = await deps.users.findById(userId);
        if (user && !user.deletedAt) await deps.forgetPhone(user.phone);
        await deps.users.markDeleted(userId, deps.clock());
        break;
      }
      case 'devices':
        await deps.devices.revokeAllOf(userId);
        await deps.devices.eraseOf(userId);
        break;
      case 'contacts':
        await deps.forgetContacts(userId);
        break;
      case 'rooms':
        await deps.forgetMemberships(userId);
        break;
      case 'e2ee':
        await deps.forgetKeys(userId, await deps.devices.allIdsOf(userId));
        break;
      case 'apps':
        await deps.apps.forget(userId);
        break;
      case 'messages':
        await deps.forgetReader(userId);
        if (eraseMessages) {
          await deps.forgetAuthor(userId);
          await deps.forgetUploads(userId);
        }
        break;
      case 'profile':
        await deps.removeAvatarOf(userId);
        await deps.forgetExports(userId);
        await deps.forgetReporter(userId);
        await deps.forgetReader(userId);
        await deps.users.eraseProfile(userId, deps.clock());
        // Last: the steps before read the account's devices from it.
        await deps.devices.forgetListOf(userId);
        break;
    }
    await deps.repo.stepDone(userId, step, deps.clock());
  }
}
