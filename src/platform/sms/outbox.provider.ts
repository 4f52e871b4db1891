import { appendFile, mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { SmsProvider } from './sms.js';

/**
 * Development and test provider: appends each message as one JSON line
 * `{"to", "text", "code", "at"}` to a file (docs/clients/sign-in.md).
 */
export class OutboxSmsProvider implements SmsProvider {
  readonly name = 'outbox';

  constructor(private readonly file: string) {}

  async send(message: { to: string; text: string; code?: string }): Promise<void> {
    await mkdir(path.dirname(path.resolve(this.file)), { recursive: true });
    const line = JSON.stringify({ to: message.to, text: message.text, code: message.code ?? null, at: new Date().toISOString() });
    await appendFile(this.file, `${line}\n`, { mode: 0o600 });
  }
}
