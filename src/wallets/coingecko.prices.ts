import { invert, type PriceSource, type Rate } from './prices.js';

/** A decimal string of a JSON number as it came: no binary rounding (the body is read as text). */
const PRICE = /"ethereum"\s*:\s*\{[^}]*"usd"\s*:\s*(\d+(?:\.\d+)?)/;

/**
 * ETH's price from CoinGecko's public API (`GET /api/v3/simple/price?ids=ethereum&vs_currencies=usd`,
 * answer `{"ethereum":{"usd":3012.45}}`), with USDT taken at one US dollar. The number is read from the
 * body's text, never through a JavaScript number. Answers are kept `cacheSeconds` (the free API allows a
 * few calls a minute); an API that fails gives the last price for at most `staleSeconds`, then an error.
 */
export class CoinGeckoPriceSource implements PriceSource {
  readonly name = 'coingecko';
  private last: { rates: Rate[]; at: number } | null = null;

  constructor(private readonly options: { baseUrl: string; apiKey?: string; cacheSeconds: number; staleSeconds: number; timeoutMs?: number }) {}

  async rates(): Promise<Rate[]> {
    const now = Date.now();
    if (this.last && now - this.last.at < this.options.cacheSeconds * 1000) return this.last.rates;
    try {
      const url = `${this.options.baseUrl.replace(/\/$/, '')}/api/v3/simple/price?ids=ethereum&vs_currencies=usd`;
      const answer = await fetch(url, {
        headers: { accept: 'application/json', ...(this.options.apiKey ? { 'x-cg-demo-api-key': this.options.apiKey } : {}) },
        signal: AbortSignal.timeout(this.options.timeoutMs ?? 5_000),
      });
      if (!answer.ok) throw new Error(`CoinGecko answered ${answer.status}`);
      const price = PRICE.exec(await answer.text())?.[1];
      if (!price || /^0+(\.0+)?$/.test(price)) throw new Error('CoinGecko gave no ETH price');
      const rates: Rate[] = [
        { from: 'ETH', to: 'USDT', rate: price },
        { from: 'USDT', to: 'ETH', rate: invert(price) },
      ];
      this.last = { rates, at: now };
      return rates;
    } catch (error) {
      if (this.last && now - this.last.at < this.options.staleSeconds * 1000) return this.last.rates;
      throw error;
    }
  }
}
