import { appendFile, mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { EmailProvider } from './email.js';

/** Development and test provider: one JSON line `{"to", "subject", "text", "at"}` per message. */
export class OutboxEmailProvider implements EmailProvider {
  readonly name = 'outbox';

  constructor(private readonly file: string) {}

  async send(message: { to: string; subject: string; text: string }): Promise<void> {
    await mkdir(path.dirname(path.resolve(this.file)), { recursive: true });
    await appendFile(this.file, `${JSON.stringify({ ...message, at: new Date().toISOString() })}\n`, { mode: 0o600 });
  }
}
