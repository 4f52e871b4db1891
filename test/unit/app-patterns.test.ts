import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseManifest } from '../../src/apps/shared/manifest.js';
import { checkValues, TEXT_ANSWER_MAX } from '../../src/apps/invocations/invocations.service.js';

const input = (pattern: string, maxLength?: number) => ({ id: 'code', type: 'text' as const, label: 'Code', rules: { pattern, ...(maxLength ? { maxLength } : {}) } });

/** Apps' input patterns cannot stall a process (issue 24, item 1): RE2, lengths first, unsupported patterns refused at upload. */
describe('apps: input patterns', () => {
  it('a catastrophic pattern against the longest answer finishes at once (RE2: linear time, no backtracking)', () => {
    // On V8's backtracking engine /^(?:(a+)+)$/ takes exponential time on "aaa…a!": this would not finish.
    const started = performance.now();
    const problems = checkValues([input('(a+)+')], { code: `${'a'.repeat(TEXT_ANSWER_MAX - 1)}!` });
    const ms = performance.now() - started;
    assert.deepEqual(problems, [{ input: 'code', message: 'does not match the pattern' }]);
    // A generous bound (the check takes a few milliseconds): the point is that it ends.
    assert.ok(ms < 1_000, `took ${ms.toFixed(0)} ms`);
    assert.deepEqual(checkValues([input('(a+)+')], { code: 'aaaa' }), []);
  });

  it('checks lengths before any pattern: an answer over the bound never reaches it', () => {
    assert.deepEqual(checkValues([input('(a+)+')], { code: 'a'.repeat(50_000) }), [{ input: 'code', message: `at most ${TEXT_ANSWER_MAX} characters` }]);
    assert.deepEqual(checkValues([input('[a-z]+', 5)], { code: 'abcdefg' }), [{ input: 'code', message: 'at most 5 characters' }]);
  });

  it('refuses at upload a pattern RE2 cannot run (backreferences, lookaround), keeps the rest', () => {
    const manifest = (pattern: string) => ({
      version: '1.0.0',
      scopes: [],
      commands: [{ id: 'order', title: 'Order', flow: 'f' }],
      flows: [{ id: 'f', mode: 'static', views: [{ id: 'v', title: 'V', inputs: [input(pattern)] }] }],
    });
    for (const pattern of ['(a)\\1', '(?=a)a', '(?<!x)y']) {
      assert.throws(() => parseManifest(manifest(pattern)), (error: { code?: string; details?: { path: string }[] }) => error.code === 'MANIFEST_INVALID' && error.details?.[0]?.path === 'flows.0.views.0.inputs.0.rules.pattern', pattern);
    }
    for (const pattern of ['[A-Z]{2}\\d{4}', '\\p{L}+( \\p{L}+)*', '[a-z0-9._%+-]+@[a-z0-9.-]+\\.[a-z]{2,}']) assert.doesNotThrow(() => parseManifest(manifest(pattern)), pattern);
  });
});
