import argon2 from 'argon2';

/** Short secrets (SMS codes) are stored as argon2id hashes only, at the configured cost. */
export class CodeHasher {
  constructor(private readonly cost: { memoryKiB: number; passes: number }) {}

  hash(code: string): Promise<string> {
    return argon2.hash(code, { type: argon2.argon2id, memoryCost: this.cost.memoryKiB, timeCost: this.cost.passes });
  }

  /** Checks a code against its hash (the hash carries its own cost, so older hashes still verify). */
  verify(hash: string, code: string): Promise<boolean> {
    return argon2.verify(hash, code);
  }
}
