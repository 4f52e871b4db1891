import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isForbiddenAddress } from '../../src/apps/delivery/webhook-client.js';
import { csvField } from '../../src/apps/console/console.service.js';

describe('what a member or an app sends cannot reach further than meant', () => {
  it('the webhook address filter refuses IPv6 forms that carry a private IPv4 address, and tunnels', () => {
    for (const address of ['::7f00:1', '::127.0.0.1', '::ffff:7f00:1', '::ffff:127.0.0.1', '::ffff:10.0.0.1', '2002:7f00:1::1', '2002:a00:1::', '2001:0:4136:e378:8000:63bf:3fff:fdd2', '::', '::1', 'fe80::1', 'fd00::1', '100::1']) {
      assert.equal(isForbiddenAddress(address), true, address);
    }
    for (const address of ['2606:4700:4700::1111', '2a00:1450:4001:80b::200e', '1.1.1.1', '::ffff:1.1.1.1', '::ffff:101:101']) assert.equal(isForbiddenAddress(address), false, address);
  });

  it('activity CSV cells that a spreadsheet would run as a formula are neutralised', () => {
    assert.equal(csvField('=HYPERLINK("http://x","y")'), '"\'=HYPERLINK(""http://x"",""y"")"');
    assert.equal(csvField('+1+1'), "'+1+1");
    assert.equal(csvField('-2'), "'-2");
    assert.equal(csvField('@SUM(A1)'), "'@SUM(A1)");
    assert.equal(csvField('\t=1'), "'\t=1");
    assert.equal(csvField(-2), '-2', 'a number stays a number');
    assert.equal(csvField('plain, text'), '"plain, text"');
    assert.equal(csvField(null), '');
  });
});
