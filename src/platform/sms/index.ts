import type { Config } from '../config.js';
import { OutboxSmsProvider } from './outbox.provider.js';
import type { SmsProvider } from './sms.js';
import { TwilioSmsProvider } from './twilio.provider.js';

/** The configured SMS provider: the outbox file in development, Twilio in production. */
export function smsProvider(config: Config): SmsProvider {
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
