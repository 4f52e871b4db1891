import { Decimal128 } from 'mongodb';

/** The currencies wallets hold: ETH natively, USDT as an ERC-20 token. */
export const CURRENCIES = {
  ETH: { decimals: 18 },
  USDT: { decimals: 6 },
} as const;
export type Currency = keyof typeof CURRENCIES;
export const CURRENCY_CODES = ['ETH', 'USDT'] as const satisfies readonly Currency[];

/** An amount on the wire: a positive decimal string, at most 30 digits before the point. */
export const AMOUNT_PATTERN = /^(0|[1-9]\d{0,29})(\.\d{1,18})?$/;

/**
 * A decimal string in the currency's smallest unit ("0.015" ETH → 15000000000000000n); null when it
 * is not a decimal, has more fraction digits than the currency has decimals, or is not above zero.
 * Money is never a JavaScript number.
 */
export function parseAmount(text: string, currency: Currency): bigint | null {
  if (!AMOUNT_PATTERN.test(text)) return null;
  const { decimals } = CURRENCIES[currency];
  const [whole = '0', fraction = ''] = text.split('.');
  if (fraction.length > decimals) return null;
  const units = BigInt(whole) * 10n ** BigInt(decimals) + BigInt(fraction.padEnd(decimals, '0') || '0');
  return units > 0n ? units : null;
}

/** Smallest units as a decimal string without trailing zeros (15000000000000000n ETH → "0.015"). */
export function formatAmount(units: bigint, currency: Currency): string {
  const { decimals } = CURRENCIES[currency];
  const negative = units < 0n;
  const digits = (negative ? -units : units).toString().padStart(decimals + 1, '0');
  const whole = digits.slice(0, digits.length - decimals);
  const fraction = digits.slice(digits.length - decimals).replace(/0+$/, '');
  return `${negative ? '-' : ''}${whole}${fraction ? `.${fraction}` : ''}`;
}

/** Storage form: Decimal128 holds 34 digits, enough for any wei amount (a 64-bit integer is not). */
export const toStored = (units: bigint): Decimal128 => Decimal128.fromString(units.toString());

export function fromStored(value: Decimal128 | null | undefined): bigint {
  if (!value) return 0n;
  const text = value.toString();
  // Integers only are ever stored; an exponent form ("1E+3") still reads exactly.
  const match = /^(-?\d+)(?:E\+?(\d+))?$/i.exec(text);
  if (!match) throw new Error(`not an integer amount: ${text}`);
  // `!`: the pattern matched, so its first group is there.
  return BigInt(match[1]!) * 10n ** BigInt(match[2] ?? '0');
}
