import type { Currency } from './money.js';
import { WalletsErrors } from './wallets.errors.js';

/** How much of `to` one unit of `from` buys, as a decimal string. */
export interface Rate {
  from: Currency;
  to: Currency;
  rate: string;
}

/** Where exchange rates come from: a configured static feed here, a public price API in production (to come). */
export interface PriceSource {
  readonly name: string;
  rates(): Promise<Rate[]>;
}

/** 1 / rate as a decimal string with `digits` fraction digits, in integer arithmetic (never JavaScript numbers). */
export function invert(rate: string, digits = 18): string {
  const [whole = '0', fraction = ''] = rate.split('.');
  const scale = 10n ** BigInt(fraction.length);
  const value = BigInt(whole + fraction);
  if (value === 0n) throw new Error('cannot invert a zero rate');
  const scaled = (scale * 10n ** BigInt(digits)) / value;
  const text = scaled.toString().padStart(digits + 1, '0');
  const integer = text.slice(0, text.length - digits);
  const decimals = text.slice(text.length - digits).replace(/0+$/, '');
  return decimals ? `${integer}.${decimals}` : integer;
}

/** A fixed ETH price in USDT (development, tests): both directions. */
export class StaticPriceSource implements PriceSource {
  readonly name = 'static';

  constructor(private readonly ethInUsdt: string) {}

  async rates(): Promise<Rate[]> {
    return [
      { from: 'ETH', to: 'USDT', rate: this.ethInUsdt },
      { from: 'USDT', to: 'ETH', rate: invert(this.ethInUsdt) },
    ];
  }
}

/** A price source whose failures answer 503 PRICES_UNAVAILABLE (not 500). */
export function guarded(source: PriceSource, onError: (error: unknown) => void): PriceSource {
  return {
    name: source.name,
    async rates() {
      try {
        return await source.rates();
      } catch (error) {
        onError(error);
        throw WalletsErrors.PRICES_UNAVAILABLE();
      }
    },
  };
}
