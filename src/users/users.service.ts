import type { z } from 'zod';
import type { Principal } from '../platform/principal.js';
import { matchTotpStep, newTotpSecret, totpUri } from './totp.js';
import { isDuplicateKey } from '../platform/mongo.js';
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
      email: user.email ?? null,
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

  async updateMe(principal: Principal, changes: ProfileChanges): Promise<UserDoc> {
    let user;
    try {
      user = await this.users.updateProfile(principal.userId, changes, this.clock());
    } catch (error) {
      if (isDuplicateKey(error)) throw UsersErrors.EMAIL_TAKEN();
      throw error;
    }
    if (!user) throw CommonErrors.UNAUTHORIZED();
    return user;
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
