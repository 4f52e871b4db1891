/** Sends text messages. `code` is given separately so the development outbox can record it. */
export interface SmsProvider {
  readonly name: string;
  send(message: { to: string; text: string; code?: string }): Promise<void>;
}
