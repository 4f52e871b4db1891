import type { EmailProvider } from './email.js';

/** SendGrid's v3 Mail Send API: POST /v3/mail/send with a bearer API key; 202 on acceptance. */
export class SendgridEmailProvider implements EmailProvider {
  readonly name = 'sendgrid';

  constructor(private readonly options: { apiKey: string; from: string; apiBase: string }) {}

  async send(message: { to: string; subject: string; text: string }): Promise<void> {
    const response = await fetch(new URL('/v3/mail/send', this.options.apiBase), {
      method: 'POST',
      headers: { authorization: `Bearer ${this.options.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        personalizations: [{ to: [{ email: message.to }] }],
        from: { email: this.options.from },
        subject: message.subject,
        content: [{ type: 'text/plain', value: message.text }],
      }),
      signal: AbortSignal.timeout(10_000),
    });
    if (response.status !== 202 && !response.ok) throw new Error(`e-mail provider answered ${response.status}`);
  }
}
