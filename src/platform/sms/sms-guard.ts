import { parsePhoneNumberFromString } from 'libphonenumber-js/max';
import type { Clock } from '../clock.js';
import { CommonErrors } from '../common.errors.js';
import type { EphemeralStore } from '../ephemeral.js';

/** Where texts may go and how many an hour (docs/clients/sign-in.md, "Sign-in abuse"). */
export interface SmsPolicy {
  /** ISO 3166 codes texts may go to; null: every country. */
  allowedCountries: ReadonlySet<string> | null;
  /** libphonenumber number types texts may go to (MOBILE, FIXED_LINE_OR_MOBILE, ...; UNKNOWN for none). */
  allowedTypes: ReadonlySet<string>;
  /** Texts an hour: to one country, to one number prefix (the first PREFIX_DIGITS digits), in all. */
  budgets: { country: number; prefix: number; global: number };
  /** The same budgets for invitations, counted apart: invitations never spend what sign-in codes need. */
  invitationBudgets: { country: number; prefix: number; global: number };
}

/** What a text is for: each purpose spends from budgets of its own. */
export type SmsPurpose = 'code' | 'invitation';

const PREFIX_DIGITS = 6;
const HOUR_MS = 3_600_000;

export type BudgetScope = 'country' | 'prefix' | 'global';

/**
 * SMS pumping (toll fraud) defence: a destination outside the allowed countries or of a refused number
 * type (premium rate, shared cost, toll free, VoIP, unknown) is refused before anything is hashed or
 * sent; every text spends from hourly budgets per destination country, per number prefix and in all,
 * and a spent budget answers 503 SMS_UNAVAILABLE until the next hour. The hour comes from the
 * platform's clock, so tests move it.
 */
export class SmsGuard {
  /** Refusals for a spent budget since the process started, by scope (the api's metrics show them). */
  readonly refusals: Record<BudgetScope, number> = { country: 0, prefix: 0, global: 0 };

  constructor(
    private readonly policy: SmsPolicy,
    private readonly ephemeral: EphemeralStore,
    private readonly keyOf: (scope: string, hour: number) => string,
    private readonly clock: Clock,
  ) {}

  /** Refuses (400 PHONE_COUNTRY_NOT_ALLOWED) a destination texts may not go to; cheap, no Redis. Its country. */
  check(phone: string): string {
    const parsed = parsePhoneNumberFromString(phone);
    const country = parsed?.country ?? 'UNKNOWN';
    if (this.policy.allowedCountries && !this.policy.allowedCountries.has(country)) {
      throw CommonErrors.PHONE_COUNTRY_NOT_ALLOWED({ message: 'Texts cannot be sent to numbers of this country' });
    }
    const type = parsed?.getType() ?? 'UNKNOWN';
    if (!this.policy.allowedTypes.has(type)) throw CommonErrors.PHONE_COUNTRY_NOT_ALLOWED({ message: 'Texts cannot be sent to this kind of number' });
    return country;
  }

  /**
   * Spends one text from each budget of the destination for its purpose; 503 SMS_UNAVAILABLE (until
   * the next hour) when one is spent. Invitations count in budgets of their own (`invite:` keys), so a
   * flood of them can never hold back a sign-in code.
   */
  async spend(phone: string, purpose: SmsPurpose = 'code'): Promise<void> {
    const country = this.check(phone);
    const now = this.clock().getTime();
    const hour = Math.floor(now / HOUR_MS);
    const budgets = purpose === 'invitation' ? this.policy.invitationBudgets : this.policy.budgets;
    const scope = purpose === 'invitation' ? 'invite:' : '';
    const scopes: [BudgetScope, string, number][] = [
      ['global', `${scope}global`, budgets.global],
      ['country', `${scope}country:${country}`, budgets.country],
      ['prefix', `${scope}prefix:${phone.replace(/\D/g, '').slice(0, PREFIX_DIGITS)}`, budgets.prefix],
    ];
    const counts = await this.ephemeral.countAll(scopes.map(([, key]) => this.keyOf(key, hour)), 2 * HOUR_MS / 1000);
    const spent = scopes.find(([, , budget], i) => (counts[i] ?? 0) > budget);
    if (spent) {
      this.refusals[spent[0]]++;
      throw CommonErrors.SMS_UNAVAILABLE({ message: 'Texts are paused for a while; try again later', retryAfter: Math.ceil(((hour + 1) * HOUR_MS - now) / 1000) });
    }
  }
}
