import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { html, raw } from '../../rest/console/html.js';
import { firstJsonError, lineOf, printedLines, syntaxErrorPlace } from '../../rest/console/manifest-view.js';
import { BODY_EXCERPT_CHARS, bodyExcerpt } from '../../src/apps/delivery/webhooks.service.js';

describe('the console\'s page building', () => {
  it('escapes every value it is given, and only those', () => {
    const name = '<script>alert("x")</script> & \'y\'';
    assert.equal(html`<p title="${name}">${name}</p>`.text, '<p title="&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;y&#39;">&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;y&#39;</p>');
    assert.equal(html`<ul>${['<a>', html`<li>ok</li>`]}</ul>`.text, '<ul>&lt;a&gt;<li>ok</li></ul>');
    assert.equal(html`${null}${undefined}${false}${0}${raw('<br>')}`.text, '0<br>');
  });

  it('prints a manifest line for line as JSON.stringify(value, null, 2) does, each line knowing its path', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        assert.equal(printedLines(value).map((line) => line.text).join('\n'), JSON.stringify(value, null, 2));
      }),
      { numRuns: 300 },
    );
    const lines = printedLines({ version: '1', commands: [{ id: 'a' }, { id: 'b', flow: 'x' }] });
    assert.equal(lines[lineOf(lines, 'commands.1.flow') - 1]!.text, '      "flow": "x"');
    // A path the manifest lacks (a missing field) is marked on the nearest value that holds it.
    assert.equal(lines[lineOf(lines, 'commands.0.title') - 1]!.text, '    {');
    assert.equal(lineOf(lines, ''), 1);
  });

  it('finds a JSON syntax error\'s line and column', () => {
    const text = '{\n  "version": "1",\n  "commands": [,]\n}';
    let error: Error | undefined;
    try {
      JSON.parse(text);
    } catch (caught) {
      error = caught as Error;
    }
    // V8 names no place for an unexpected token: the scan finds it.
    assert.doesNotMatch(error!.message, /position|line/);
    assert.deepEqual(syntaxErrorPlace(text, error!), { line: 3, column: 16 });
  });

  it('its JSON scan agrees with JSON.parse on what is JSON, one character removed or changed', () => {
    const parses = (text: string) => {
      try {
        JSON.parse(text);
        return true;
      } catch {
        return false;
      }
    };
    fc.assert(
      fc.property(fc.jsonValue(), fc.nat(), fc.constantFrom('', ',', '}', ']', '"', ':', 'x', '\\', '0'), (value, at, put) => {
        const text = JSON.stringify(value, null, 2);
        const cut = at % (text.length + 1);
        const changed = text.slice(0, cut) + put + text.slice(cut + 1);
        assert.equal(firstJsonError(text), null);
        assert.equal(firstJsonError(changed) === null, parses(changed), changed);
      }),
      { numRuns: 1000 },
    );
  });

  it('keeps a call\'s body whole up to 2,048 characters, then its start and its length', () => {
    assert.equal(bodyExcerpt(Buffer.from('{"type":"ping"}')), '{"type":"ping"}');
    const long = Buffer.from(`"${'é'.repeat(3000)}"`);
    const kept = bodyExcerpt(long);
    assert.ok(kept.startsWith(`"${'é'.repeat(BODY_EXCERPT_CHARS - 1)}…`));
    assert.ok(kept.endsWith(`(${long.length} bytes in all)`));
  });
});
