import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { TtlCache } from '../../src/platform/cache/ttl-cache.js';

describe('TtlCache', () => {
  it('serves a loaded value until it expires, then loads again', async () => {
    let now = 0;
    let loads = 0;
    const cache = new TtlCache<number>(1_000, 10, () => now);
    const load = async () => ++loads;
    assert.equal(await cache.get('k', load), 1);
    now = 999;
    assert.equal(await cache.get('k', load), 1);
    now = 1_000;
    assert.equal(await cache.get('k', load), 2);
  });

  it('does not keep a value whose load overlapped a delete: the read may predate the write', async () => {
    const cache = new TtlCache<string>(60_000);
    let release: (value: string) => void = () => undefined;
    const slow = cache.get('k', () => new Promise<string>((resolve) => (release = resolve)));
    cache.delete('k'); // a write cleared the key while the read was under way
    release('old');
    assert.equal(await slow, 'old', 'the caller still gets what it read');
    assert.equal(await cache.get('k', async () => 'new'), 'new', 'but the next reader reads again');
  });

  it('keeps nothing from a failed load, and holds at most maxEntries', async () => {
    const cache = new TtlCache<number>(60_000, 2);
    await assert.rejects(cache.get('k', async () => Promise.reject(new Error('down'))));
    assert.equal(await cache.get('k', async () => 7), 7);
    await cache.get('a', async () => 1);
    await cache.get('b', async () => 2); // 'k' is the oldest and goes
    assert.equal(await cache.get('k', async () => 8), 8);
  });
});
