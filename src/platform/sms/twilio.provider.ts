import type { SmsProvider } from './sms.js';
import { CommonErrors } from '../common.errors.js';
import { z } from 'zod';

/** Twilio's Programmable Messaging REST API: POST /2010-04-01/Accounts/{sid}/Messages.json. */
export class TwilioSmsProvider implements SmsProvider {
  readonly name = 'twilio';

  constructor(
    private readonly options: { accountSid: string; authToken: string; from: string; apiBase: string; timeoutMs?: number },
  ) {}

  async send(message: { to: string; text: string }): Promise<void> {
    const { accountSid, authToken, from, apiBase } = this.options;
    const url = new URL(`/2010-04-01/Accounts/${encodeURIComponent(accountSid)}/Messages.json`, apiBase);
    const response = await fetch(url, {
      method: 'POST',
      headers: {
        authorization: `Basic ${Buffer.from(`${accountSid}:${authToken}`).toString('base64')}`,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: new URLSearchParams({ To: message.to, From: from, Body: message.text }),
      signal: AbortSignal.timeout(this.options.timeoutMs ?? 10_000),
    });
    if (!response.ok) {
      // Twilio's error body names the problem (e.g. 21211 invalid 'To'); never the credentials.
      const body = z.object({ code: z.number().optional(), message: z.string().optional() }).safeParse(await response.json().catch(() => ({}))).data ?? {};
      if (response.status === 400 && body.code === 21211) {
        throw CommonErrors.PHONE_INVALID({ message: 'The phone number cannot receive text messages' });
      }
      throw new Error(`SMS provider answered ${response.status}${body.code ? ` (code ${body.code})` : ''}`);
    }
  }
}
