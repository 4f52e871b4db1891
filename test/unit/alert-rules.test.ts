import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const deploy = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../deploy');
const promtool = (...args: string[]) => execFileSync('promtool', args, { cwd: deploy, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

/** The alerting rules an operator loads (deploy/alerts.rules.yml), checked by Prometheus's own tool (Debian's promtool, installed by npm test). */
describe('the alerting rules', () => {
  it('promtool accepts them', () => {
    assert.match(promtool('check', 'rules', 'alerts.rules.yml'), /SUCCESS: \d+ rules found/);
  });

  it('each fires on an outage\'s series and stays quiet where it must (promtool test rules)', () => {
    assert.match(promtool('test', 'rules', 'alerts.rules.test.yml'), /SUCCESS/);
  });
});
