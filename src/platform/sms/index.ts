import type { Config } from '../config.js';
import { CommonErrors } from '../common.errors.js';
import { AppError } from '../errors.js';
import { OutboxSmsProvider } from './outbox.provider.js';
import type { SmsMessage, SmsProvider } from './sms.js';
import type { SmsGuard, SmsPolicy } from './sms-guard.js';
import { TwilioSmsProvider } from './twilio.provider.js';

/** The configured SMS provider (the outbox file in development, Twilio in production), each text spending from the guard's budgets first. */
export function smsProvider(config: Config, guard: SmsGuard): SmsProvider {
  return new Budgeted(new UnavailableWhenDown(configuredProvider(config)), guard);
}

/** Where texts may go and the hourly budgets, from the configuration. */
export function smsPolicy(config: Config): SmsPolicy {
  return {
    allowedCountries: config.SMS_ALLOWED_COUNTRIES ? new Set(config.SMS_ALLOWED_COUNTRIES) : null,
    allowedTypes: new Set(config.SMS_ALLOWED_NUMBER_TYPES),
    budgets: { country: config.SMS_BUDGET_COUNTRY_HOUR, prefix: config.SMS_BUDGET_PREFIX_HOUR, global: config.SMS_BUDGET_GLOBAL_HOUR },
    invitationBudgets: { country: config.SMS_INVITE_BUDGET_COUNTRY_HOUR, prefix: config.SMS_INVITE_BUDGET_PREFIX_HOUR, global: config.SMS_INVITE_BUDGET_GLOBAL_HOUR },
  };
}

/** Every text is checked and spends from the hourly budgets before it goes out: none is sent past a spent budget. */
class Budgeted implements SmsProvider {
  readonly name: string;

  constructor(
    private readonly inner: SmsProvider,
    private readonly guard: SmsGuard,
  ) {
    this.name = inner.name;
  }

  async send(message: SmsMessage): Promise<void> {
    await this.guard.spend(message.to, message.purpose);
    await this.inner.send(message);
  }
}

/**
 * A provider that fails for its own reasons (down, refusing, unreachable) answers 503
 * SMS_UNAVAILABLE, so every caller gives the client a coded, retryable answer; the cause goes to the
 * log, not to the client. Refusals the provider codes itself (a number that cannot take SMS) pass.
 */
class UnavailableWhenDown implements SmsProvider {
  readonly name: string;

  constructor(private readonly inner: SmsProvider) {
    this.name = inner.name;
  }

  async send(message: SmsMessage): Promise<void> {
    try {
      await this.inner.send(message);
    } catch (error) {
      if (error instanceof AppError) throw error;
      throw CommonErrors.SMS_UNAVAILABLE({ cause: error });
    }
  }
}

function configuredProvider(config: Config): SmsProvider {
  if (config.SMS_PROVIDER === 'twilio') {
    // Presence is checked by the configuration schema.
    return new TwilioSmsProvider({
      accountSid: config.TWILIO_ACCOUNT_SID ?? '',
      authToken: config.TWILIO_AUTH_TOKEN ?? '',
      from: config.TWILIO_FROM ?? '',
      apiBase: config.TWILIO_API_BASE,
    });
  }
  return new OutboxSmsProvider(config.SMS_OUTBOX_FILE);
}
