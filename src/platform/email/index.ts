import type { Config } from '../config.js';
import type { EmailProvider } from './email.js';
import { OutboxEmailProvider } from './outbox.provider.js';
import { SendgridEmailProvider } from './sendgrid.provider.js';

/** The configured e-mail provider: the outbox file in development, SendGrid in production. */
export function emailProvider(config: Config): EmailProvider {
  if (config.EMAIL_PROVIDER === 'sendgrid') {
    return new SendgridEmailProvider({ apiKey: config.SENDGRID_API_KEY ?? '', from: config.EMAIL_FROM, apiBase: config.SENDGRID_API_BASE });
  }
  return new OutboxEmailProvider(config.EMAIL_OUTBOX_FILE);
}
