import { DEFAULT_NOTIFICATION_SETTINGS, type NotificationSettings, type QuietHours } from './quiet.js';
import type { z } from 'zod';
import type { Principal } from '../platform/principal.js';
import { matchTotpStep, newTotpSecret, totpUri } from './totp.js';
import { createHash, randomInt, timingSafeEqual } from 'node:crypto';
import type { EmailProvider } from '../platform/email/email.js';
import type { DomainEvents } from '../platform/domain-events.js';
import { must } from '../platform/must.js';
import type { ProfileChanges, UserDoc, UsersRepo } from './users.repo.js';
import { CommonErrors } from '../platform/common.errors.js';
import type { EphemeralStore } from '../platform/ephemeral.js';
import { avatarUrls } from './avatars.service.js';
import { UsersErrors } from './users.errors.js';
import type { UserSchema } from './users.schemas.js';
import type { UserDtoSchema } from './users.schemas.js';

/** As the User record of the OpenAPI document. */
export type UserView = z.infer<typeof UserSchema>;

/** As the UserDto record of the OpenAPI document. */
export type UserSummaryView = z.infer<typeof UserDtoSchema>;

/** How long a mailed confirmation code holds, and how many wrong codes drop the pending address. */
const EMAIL_CODE_TTL_MS = 3_600_000;
const EMAIL_CODE_MAX_WRONG = 5;

/** The stored form of an address's confirmation code: bound to the user and the address. */
const emailCodeHash = (userId: string, address: string, code: string) => createHash('sha256').update(`${userId}\n${address}\n${code}`).digest('hex');

export class UsersService {
  private readonly adminPhones: ReadonlySet<string>;

  constructor(
    private readonly users: UsersRepo,
    private readonly options: {
      adminPhones: string[];
      totpIssuer: string;
      /** Where the pictures' public addresses start. */
      publicBaseUrl: string;
      /** Wrong authenticator codes allowed per account and window on enable and disable (the sign-in step's bound). */
      wrongCodes: { max: number; windowSeconds: number; ephemeral: EphemeralStore; key: (userId: string) => string };
      /** Where confirmation codes for e-mail addresses are mailed. */
      mail: EmailProvider;
      domainEvents: Pick<DomainEvents, 'emit'>;
    },
    private readonly clock: () => Date = () => new Date(),
  ) {
    this.adminPhones = new Set(options.adminPhones);
  }

  /** Site administrators are the users whose number is listed in ADMIN_PHONES. */
  isAdmin(user: Pick<UserDoc, 'phone'>): boolean {
    return this.adminPhones.has(user.phone);
  }

  /** True when the user exists and is a site administrator. */
  async isSiteAdmin(userId: string): Promise<boolean> {
    const user = await this.users.findById(userId);
    return user !== null && this.isAdmin(user);
  }

  present(user: UserDoc): UserView {
    return {
      ...avatarUrls(this.options.publicBaseUrl, user),
      id: user._id,
      phone: user.phone,
      email: user.emailConfirmedAt ? (user.email ?? null) : null,
      emailPending: user.pendingEmail && user.pendingEmail.expiresAt.getTime() > this.clock().getTime() ? user.pendingEmail.address : null,
      displayName: user.displayName,
      language: user.language,
      twoFactorEnabled: user.twoFactor.enabled,
      admin: this.isAdmin(user),
      roomInvites: user.roomInvites ?? 'everyone',
      readReceipts: user.readReceipts !== false,
      createdAt: user.createdAt.toISOString(),
    };
  }

  async me(principal: Principal): Promise<UserDoc> {
    const user = await this.users.findById(principal.userId);
    if (!user) throw CommonErrors.UNAUTHORIZED();
    return user;
  }

  /**
   * Profile changes. A new e-mail address is not taken at once: a code is mailed to it, and the
   * address becomes the profile's (for matching and for mail) once confirmEmail gets that code.
   * Whether another account has the address is never said.
   */
  /** Do-not-disturb and quiet hours, as set (defaults: none; calls from connections ring). */
  async notifications(principal: Principal): Promise<NotificationSettingsView> {
    return presentSettings((await this.me(principal)).notifications ?? DEFAULT_NOTIFICATION_SETTINGS);
  }

  /** Changes what is given of the do-not-disturb settings; the rest stays. */
  async setNotifications(principal: Principal, input: { doNotDisturbUntil?: string | null | undefined; quietHours?: QuietHours | null | undefined; callsFromConnections?: boolean | undefined }): Promise<NotificationSettingsView> {
    const current = (await this.me(principal)).notifications ?? DEFAULT_NOTIFICATION_SETTINGS;
    const next: NotificationSettings = {
      doNotDisturbUntil: input.doNotDisturbUntil === undefined ? current.doNotDisturbUntil : input.doNotDisturbUntil === null ? null : new Date(input.doNotDisturbUntil),
      quietHours: input.quietHours === undefined ? current.quietHours : input.quietHours,
      callsFromConnections: input.callsFromConnections ?? current.callsFromConnections,
    };
    const updated = await this.users.setNotifications(principal.userId, next, new Date());
    if (!updated) throw CommonErrors.UNAUTHORIZED();
    return presentSettings(next);
  }

  async updateMe(principal: Principal, input: ProfileChanges & { email?: string }): Promise<UserDoc> {
    const { email, ...changes } = input;
    const current = await this.me(principal);
    let code: string | undefined;
    if (email !== undefined && !(email === current.email && current.emailConfirmedAt)) {
      code = randomInt(0, 1_000_000).toString().padStart(6, '0');
      changes.pendingEmail = { address: email, codeHash: emailCodeHash(principal.userId, email, code), expiresAt: new Date(this.clock().getTime() + EMAIL_CODE_TTL_MS), wrongTries: 0 };
    }
    const user = await this.users.updateProfile(principal.userId, changes, this.clock());
    if (!user) throw CommonErrors.UNAUTHORIZED();
    if (email !== undefined && code !== undefined) {
      await this.options.mail.send({
        to: email,
        subject: `Your ${this.options.totpIssuer} confirmation code: ${code}`,
        text: `Your ${this.options.totpIssuer} confirmation code is ${code}. Enter it in the app to use this address; it expires in an hour. If you did not ask for it, ignore this mail.`,
      });
    }
    return user;
  }

  /** The code mailed to the pending address: right, the address becomes the profile's; wrong, 400 (the fifth wrong one drops it). */
  async confirmEmail(principal: Principal, code: string): Promise<UserDoc> {
    const user = await this.me(principal);
    const pending = user.pendingEmail;
    const now = this.clock();
    if (!pending || pending.expiresAt.getTime() <= now.getTime()) throw UsersErrors.EMAIL_CODE_INVALID();
    const given = Buffer.from(emailCodeHash(user._id, pending.address, code), 'hex');
    if (!timingSafeEqual(given, Buffer.from(pending.codeHash, 'hex'))) {
      await this.users.wrongEmailCode(user._id, EMAIL_CODE_MAX_WRONG);
      throw UsersErrors.EMAIL_CODE_INVALID();
    }
    const confirmed = must(await this.users.confirmEmail(user._id, pending.address, now), 'the user just confirmed');
    await this.options.domainEvents.emit('user.email-confirmed', { userId: user._id, email: pending.address });
    return confirmed;
  }

  /** Another user's public summary. Phone numbers are never shown to others. */
  async getSummary(_principal: Principal, userId: string): Promise<UserSummaryView> {
    const user = await this.users.findById(userId);
    if (!user) throw UsersErrors.USER_NOT_FOUND();
    return userSummary(this.options.publicBaseUrl, user, userId);
  }

  /** Starts two-factor setup: a new pending secret, confirmed later by `enableTwoFactor`. */
  async setupTwoFactor(principal: Principal): Promise<{ secret: string; otpauthUri: string }> {
    const user = await this.me(principal);
    if (user.twoFactor.enabled) throw UsersErrors.TWO_FACTOR_ALREADY_ENABLED();
    const secret = newTotpSecret();
    await this.users.setPendingSecret(user._id, secret, this.clock());
    return { secret, otpauthUri: totpUri(this.options.totpIssuer, user.phone, secret) };
  }

  /**
   * Wrong codes on enable and disable are bounded like the sign-in step's, so a stolen access token
   * cannot guess its way to switching two-factor off: past the allowance, 429 with Retry-After.
   */
  private async assertTriesLeft(userId: string): Promise<void> {
    const { ephemeral, key, max } = this.options.wrongCodes;
    const retryAfter = await ephemeral.exhausted(key(userId), max);
    if (retryAfter !== null) throw UsersErrors.TOO_MANY_ATTEMPTS({ message: 'Too many wrong authenticator codes; try again later', retryAfter });
  }

  private async wrongCode(userId: string, message?: string) {
    const { ephemeral, key, max, windowSeconds } = this.options.wrongCodes;
    await ephemeral.hit(key(userId), max, windowSeconds);
    return UsersErrors.TWO_FACTOR_CODE_INVALID(message ? { message } : {});
  }

  /** Spec, "States and transitions": off → on with a correct code; already on changes nothing. */
  async enableTwoFactor(principal: Principal, code: string): Promise<UserDoc> {
    const user = await this.me(principal);
    if (user.twoFactor.enabled) return user;
    const pending = user.twoFactor.pendingSecret;
    if (!pending) throw UsersErrors.TWO_FACTOR_NOT_SET_UP();
    await this.assertTriesLeft(user._id);
    const step = await matchTotpStep(pending, code, this.clock());
    if (step === null) throw await this.wrongCode(user._id, 'The authenticator code is wrong');
    const enabled = await this.users.enableTwoFactor(user._id, pending, step, this.clock());
    // A concurrent enable or a new setup won the race: report the state as it now is.
    return enabled ?? (await this.me(principal));
  }

  /** Spec, "States and transitions": on → off with a correct code, replacing the secret; already off changes nothing. */
  async disableTwoFactor(principal: Principal, code: string): Promise<UserDoc> {
    const user = await this.me(principal);
    const secret = user.twoFactor.secret;
    if (!user.twoFactor.enabled || !secret) return user;
    await this.assertTriesLeft(user._id);
    const step = await matchTotpStep(secret, code, this.clock());
    if (step === null || !(await this.users.claimTotpStep(user._id, step))) throw await this.wrongCode(user._id);
    const disabled = await this.users.disableTwoFactor(user._id, secret, newTotpSecret(), this.clock());
    return disabled ?? (await this.me(principal));
  }

  /**
   * Checks an authenticator code for an action of the account's own (its deletion): once per code,
   * counted like two-factor changes; throws the same codes. Nothing to check when two-factor is off.
   */
  async confirmWithTwoFactor(userId: string, code: string | undefined): Promise<void> {
    const user = await this.users.findById(userId);
    const secret = user?.twoFactor.enabled ? user.twoFactor.secret : null;
    if (!user || !secret) return;
    await this.assertTriesLeft(userId);
    if (!code) throw UsersErrors.TWO_FACTOR_CODE_INVALID({ message: 'Two-factor authentication is on: give the authenticator code' });
    const step = await matchTotpStep(secret, code, this.clock());
    if (step === null || !(await this.users.claimTotpStep(userId, step))) throw await this.wrongCode(userId);
  }
}

/** A user as others see them (UserDto): never the phone number. `user` undefined: a user that is gone. */
export function userSummary(baseUrl: string, user: Pick<UserDoc, '_id' | 'displayName' | 'avatar' | 'deletedAt'> | null | undefined, id: string): UserSummaryView {
  // A deleted account shows no name or picture, even before its profile is erased.
  if (user?.deletedAt) return { id, deleted: true, displayName: null, avatarUrl: null, avatarThumbnailUrl: null };
  return { id, deleted: false, displayName: user?.displayName ?? null, ...avatarUrls(baseUrl, user) };
}

export interface NotificationSettingsView {
  doNotDisturbUntil: string | null;
  quietHours: QuietHours | null;
  callsFromConnections: boolean;
}

function presentSettings(settings: NotificationSettings): NotificationSettingsView {
  return { doNotDisturbUntil: settings.doNotDisturbUntil?.toISOString() ?? null, quietHours: settings.quietHours, callsFromConnections: settings.callsFromConnections };
}
