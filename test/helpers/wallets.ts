import { generateKeyPairSync, randomUUID, sign } from 'node:crypto';
import { Ledger } from '../../src/wallets/ledger.js';
import type { Currency } from '../../src/wallets/money.js';
import type { Session, TestApp } from './app.js';
import { httpAs } from './factories.js';

const ledgers = new WeakMap<TestApp, Ledger>();

/** The test app's ledger, as the services use it. */
export function ledgerOf(t: TestApp): Ledger {
  let ledger = ledgers.get(t);
  if (!ledger) {
    ledger = new Ledger({ repo: t.ctx.repos.ledger, clock: t.clock, logger: t.ctx.platform.logger });
    ledgers.set(t, ledger);
  }
  return ledger;
}

/** Money arriving from outside, as the deposit watcher credits it: an entry from the chain's account. */
export async function fund(t: TestApp, walletId: string, currency: Currency, units: bigint): Promise<void> {
  const ledger = ledgerOf(t);
  const chain = await ledger.ensureSystemAccount('chain', currency);
  await ledger.post({ id: `test-deposit:${randomUUID()}:${walletId}`, kind: 'DEPOSIT', currency, amount: units, debit: chain, credit: walletId, fingerprint: 'test', memo: {} });
}

/** A new wallet of `s` made through the API, funded with `units` (none when 0); its id. */
export async function walletWith(t: TestApp, s: Session, currency: Currency, units: bigint): Promise<string> {
  const res = await httpAs(() => t)(s, 'POST', '/api/wallets', { currency });
  if (res.statusCode !== 200) throw new Error(`wallet creation answered ${res.statusCode}: ${res.body}`);
  const walletId = (res.json() as { id: string }).id;
  if (units > 0n) await fund(t, walletId, currency, units);
  return walletId;
}

/**
 * Enrols an Ed25519 biometric key on the session's device, as a phone does (a nonce, then the key with
 * its signature over it); `signWith` signs with that key, `nonce` asks for the next confirmation nonce.
 */
export async function withBiometricKey(t: TestApp, s: Session): Promise<{ signWith: (message: string) => string; nonce: () => Promise<string> }> {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const signWith = (message: string) => sign(null, Buffer.from(message), privateKey).toString('base64');
  const nonce = async () => (await httpAs(() => t)(s, 'POST', '/api/devices/biometric-key/nonce')).json().nonce as string;
  const n0 = await nonce();
  const enrolled = await httpAs(() => t)(s, 'PUT', '/api/devices/biometric-key', { publicKey: publicKey.export({ format: 'der', type: 'spki' }).toString('base64'), algorithm: 'ED25519', nonce: n0, signature: signWith(`BIOMETRIC_KEY_ENROLL_V1|${n0}`) });
  if (enrolled.statusCode !== 204) throw new Error(`enrolling a biometric key answered ${enrolled.statusCode}: ${enrolled.body}`);
  return { signWith, nonce };
}

