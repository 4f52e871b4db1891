import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Parser } from '@asyncapi/parser';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { filesUnder, projectRoot as project } from '../helpers/files.js';

/** Socket.IO's own events: not the protocol's. */
const RESERVED = new Set(['connect', 'connection', 'disconnect', 'disconnecting', 'error', 'message', 'close', 'open', 'packet', 'drain', 'upgrade', 'headers', 'initial_headers']);

/**
 * Every event name the code sends to devices or listens to from them, read from the source: a socket's
 * `emit`/`on` in the hub, and every `toDevice`/`toUsers`/`toRoom`/`supersede` of the emitters.
 */
function eventsInCode(): Map<string, string> {
  const found = new Map<string, string>();
  // The hub's sockets (realtime/ only: src/ has the in-process domain-event bus, whose emit and on are not the protocol's).
  const socketCalls = /\b(?:socket|this|io|emitter)\b[\w.()!?\s]*?\.(?:emit|on)\(\s*'([a-z][\w.-]*)'/g;
  const emitterCalls = /\.(?:toDevice|toUsers|toRoom|supersede)\([^;]*?,\s*'([a-z][\w.-]*\.[\w.-]+)'/gs;
  const scans: [string, RegExp[]][] = [
    ['realtime', [socketCalls, emitterCalls]],
    ['src', [emitterCalls]],
  ];
  for (const [folder, patterns] of scans) {
    for (const file of filesUnder(path.join(project, folder), '.ts')) {
      const text = readFileSync(file, 'utf8');
      for (const pattern of patterns) {
        for (const match of text.matchAll(pattern)) {
          const name = match[1]!;
          if (!RESERVED.has(name)) found.set(name, path.relative(project, file));
        }
      }
    }
  }
  return found;
}

describe('the device socket protocol as an AsyncAPI document', () => {
  let t: TestApp;
  let doc: {
    asyncapi: string;
    info: { version: string };
    channels: { device: { messages: Record<string, { name: string; payload: Record<string, unknown> }> } };
    operations: Record<string, { action: string; reply?: unknown }>;
  };
  before(async () => {
    t = await startTestApp();
    const res = await t.app.inject({ url: '/v3/asyncapi/device-socket' });
    assert.equal(res.statusCode, 200);
    doc = res.json();
  });
  after(() => t.close());

  it('is a valid AsyncAPI 3 document by the AsyncAPI parser, with no error or warning', async () => {
    assert.match(doc.asyncapi, /^3\./);
    const { document, diagnostics } = await new Parser().parse(JSON.stringify(doc));
    const serious = diagnostics.filter((d) => d.severity <= 1).map((d) => `${d.code} ${d.message} at ${d.path.join('.')}`);
    assert.deepEqual(serious, []);
    assert.ok(document, 'the parser made no document');
    // What a generator reads: every operation resolves to its messages.
    const names = new Set(document.operations().all().flatMap((operation) => operation.messages().all().map((message) => message.name())));
    for (const event of ['device.added', 'message.new', 'typing.start', 'inbox.ack', 'call.signal', 'hub.ping', 'inbox.resync-required', 'connect_error', 'handshake']) assert.ok(names.has(event), `${event} has no operation`);
    assert.equal(doc.info.version, (await t.app.inject({ url: '/v3/api-docs/api-traffic' })).json().info.version);
  });

  it('names every event the code sends or listens to (a new event in the code and not here fails)', () => {
    const documented = new Set(Object.values(doc.channels.device.messages).map((message) => message.name));
    const inCode = eventsInCode();
    // The scan itself works: it finds events of each kind of call.
    for (const known of ['inbox.ack', 'typing.start', 'hub.ping', 'message.new', 'contact.request', 'inbox.resync-required', 'e2ee.key-request-answered']) {
      assert.ok(inCode.has(known), `the source scan no longer finds ${known}`);
    }
    const missing = [...inCode].filter(([name]) => !documented.has(name)).map(([name, file]) => `${name} (${file})`);
    assert.deepEqual(missing, []);
  });

  it('shows each device event in its envelope, and what each acknowledgement carries', () => {
    const added = doc.channels.device.messages['device.added']!.payload as { required: string[]; properties: { data: { required: string[]; additionalProperties: boolean } } };
    assert.deepEqual(added.required, ['seq', 'at', 'data']);
    assert.deepEqual(added.properties.data.required.sort(), ['deviceId', 'name', 'platform']);
    assert.equal(added.properties.data.additionalProperties, false);
    // contact.request carries the sender as every UserDto: with the picture's links.
    assert.match(JSON.stringify(doc.channels.device.messages['contact.request']!.payload), /#\/components\/schemas\/UserDto/);
    assert.ok(doc.operations['from-device.call.signal']!.reply, 'call.signal has an acknowledgement');
    assert.ok(doc.operations['from-device.hub.ping']!.reply, 'hub.ping has an acknowledgement');
    assert.equal(doc.operations['from-device.inbox.ack']!.reply, undefined);
    assert.equal(doc.operations['to-device.message.new']!.action, 'send');
    const handshake = doc.channels.device.messages.handshake!.payload as { properties: { lastSeq: { anyOf: { type: string }[] } } };
    assert.deepEqual(handshake.properties.lastSeq.anyOf.map((s) => s.type).sort(), ['integer', 'string']);
  });
});
