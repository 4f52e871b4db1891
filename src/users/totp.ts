import { timingSafeEqual } from 'node:crypto';
import { generate, generateSecret, generateURI } from 'otplib';

const PERIOD_SECONDS = 30;
/** Codes from one step before and after now are accepted, for clock drift. */
const WINDOW_STEPS = 1;

export function newTotpSecret(): string {
  return generateSecret();
}

export function totpUri(issuer: string, account: string, secret: string): string {
  return generateURI({ issuer, label: account, secret });
}

/** The time step whose code equals `code`, or null. Compares in constant time. */
export async function matchTotpStep(secret: string, code: string, now: Date): Promise<number | null> {
  const current = Math.floor(now.getTime() / 1000 / PERIOD_SECONDS);
  const given = Buffer.from(code);
  let matched: number | null = null;
  for (let step = current - WINDOW_STEPS; step <= current + WINDOW_STEPS; step++) {
    const expected = Buffer.from(await generate({ secret, epoch: step * PERIOD_SECONDS }));
    // Every candidate is computed and compared, so timing does not tell which one matched.
    if (expected.length === given.length && timingSafeEqual(expected, given) && matched === null) matched = step;
  }
  return matched;
}
