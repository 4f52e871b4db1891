import { randomInt } from 'node:crypto';
import argon2 from 'argon2';
import { CommonErrors } from './common.errors.js';

/** A new six-digit code to text (sign-in, biometric key changes, account deletion). */
export function newSmsCode(): string {
  return randomInt(0, 1_000_000).toString().padStart(6, '0');
}

/**
 * Short secrets (SMS codes) are stored as argon2id hashes only, at the configured cost. A hash costs
 * tens of MiB of memory and tens of milliseconds, and unauthenticated requests ask for them: at most
 * `concurrency` run at once in this process; the rest wait up to `waitMs` for a turn, then get 503
 * BUSY with Retry-After.
 */
export class CodeHasher {
  private running = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(
    private readonly cost: { memoryKiB: number; passes: number },
    private readonly limits: { concurrency: number; waitMs: number } = { concurrency: 4, waitMs: 2_000 },
  ) {}

  hash(code: string): Promise<string> {
    return this.bounded(() => argon2.hash(code, { type: argon2.argon2id, memoryCost: this.cost.memoryKiB, timeCost: this.cost.passes }));
  }

  /** Checks a code against its hash (the hash carries its own cost, so older hashes still verify). */
  verify(hash: string, code: string): Promise<boolean> {
    return this.bounded(() => argon2.verify(hash, code));
  }

  private async bounded<T>(work: () => Promise<T>): Promise<T> {
    // A slot is taken here, or handed over by the hash that ends (so a newcomer cannot take it in between).
    if (this.running >= this.limits.concurrency) await this.turn();
    else this.running++;
    try {
      return await work();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.running--;
    }
  }

  /** Waits for a running hash to end and hand over its slot, at most waitMs; 503 BUSY after that. */
  private turn(): Promise<void> {
    return new Promise((resolve, reject) => {
      const wake = () => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        const at = this.waiting.indexOf(wake);
        if (at >= 0) this.waiting.splice(at, 1);
        reject(CommonErrors.BUSY({ message: 'Too many sign-ins at once; try again in a moment', retryAfter: 1 }));
      }, this.limits.waitMs);
      this.waiting.push(wake);
    });
  }
}
