/**
 * Sends text messages. `code` is given separately so the development outbox can record it;
 * `purpose` says which hourly budgets the text spends from (sign-in codes unless said).
 */
export interface SmsProvider {
  readonly name: string;
  send(message: SmsMessage): Promise<void>;
}

export interface SmsMessage {
  to: string;
  text: string;
  code?: string;
  purpose?: 'code' | 'invitation';
}
