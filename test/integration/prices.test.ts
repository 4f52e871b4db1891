import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { httpAs, makeUser } from '../helpers/factories.js';

/** A local server that speaks CoinGecko's simple-price format, with a price the test sets. */
function coinGecko() {
  const state = { body: '{"ethereum":{"usd":3012.45}}', status: 200, calls: 0, lastUrl: '' };
  const server = http.createServer((req, res) => {
    state.calls++;
    state.lastUrl = req.url ?? '';
    res.writeHead(state.status, { 'content-type': 'application/json' }).end(state.body);
  });
  return { state, server };
}

describe('prices from CoinGecko\'s API format', () => {
  const fake = coinGecko();
  let t: TestApp;
  const api = httpAs(() => t);
  before(async () => {
    await new Promise<void>((resolve) => fake.server.listen(0, '127.0.0.1', resolve));
    t = await startTestApp({ PRICE_SOURCE: 'coingecko', COINGECKO_BASE_URL: `http://127.0.0.1:${(fake.server.address() as AddressInfo).port}` });
  });
  after(async () => {
    await t.close();
    fake.server.close();
  });

  it('reads the price exactly as written, and keeps it for a while', async () => {
    const s = await makeUser(t);
    const rates = (await api(s, 'GET', '/api/exchange-rates')).json();
    assert.equal(rates.source, 'coingecko');
    assert.deepEqual(rates.rates[0], { from: 'ETH', to: 'USDT', rate: '3012.45' });
    assert.equal(rates.rates[1].rate, '0.000331955717107337');
    assert.equal(fake.state.lastUrl, '/api/v3/simple/price?ids=ethereum&vs_currencies=usd');
    await api(s, 'GET', '/api/exchange-rates');
    assert.equal(fake.state.calls, 1, 'cached');
  });

  it('answers 503 when there is no price to give', async () => {
    const other = await startTestApp({ PRICE_SOURCE: 'coingecko', COINGECKO_BASE_URL: 'http://127.0.0.1:9' });
    try {
      const s = await makeUser(other);
      const res = await httpAs(() => other)(s, 'GET', '/api/exchange-rates');
      assert.equal(res.statusCode, 503);
      assert.equal(res.json().code, 'PRICES_UNAVAILABLE');
    } finally {
      await other.close();
    }
  });
});
