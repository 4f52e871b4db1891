import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { OpenAiCompatibleSummarizer } from '../../src/summaries/openai.summarizer.js';
import type { Workers } from '../../workers/main.js';
import { signIn, startTestApp, startTestWorkers, type Session, type TestApp } from '../helpers/app.js';
import { httpAs, makeRoom } from '../helpers/factories.js';
import { DeviceClient, spawnHub, type HubProcess } from '../helpers/hubs.js';

describe('summaries (tldr)', () => {
  let t: TestApp;
  let workers: Workers;
  let hub: HubProcess;
  before(async () => {
    t = await startTestApp();
    workers = await startTestWorkers(t);
    hub = await spawnHub(t.config);
  });
  after(async () => {
    await hub.kill();
    await workers.close();
    await t.close();
  });

  const api = httpAs(() => t);

  it('answers 202, then the requester\'s devices get chat.tldr-ready with the gist; nobody else does', async () => {
    const [alice, bob, carol] = await Promise.all([signIn(t), signIn(t), signIn(t)]);
    await api(alice, 'PATCH', '/api/users/me', { displayName: 'Alice' });
    await api(bob, 'PATCH', '/api/users/me', { displayName: 'Bob' });
    const room = await makeRoom(t, alice, { name: 'Trip planning', members: [bob, carol] });
    const say = async (s: Session, text: string) => (await api(s, 'PUT', `/api/messages/${room.id}`, { roomId: room.id, message: text })).json() as string;
    await say(alice, 'Hi!');
    await say(alice, 'The train to Vienna leaves Friday morning. We should book the Vienna train tickets today.');
    const pivot = await say(bob, 'I will book the Vienna train tickets tonight. The hotel in Vienna is already booked.');
    await say(alice, 'Great, thanks.');
    await say(bob, 'Remember passports for the Vienna trip.');

    const mine = new DeviceClient(alice.accessToken);
    const theirs = new DeviceClient(carol.accessToken);
    await mine.connect(hub.port);
    await theirs.connect(hub.port);
    try {
      const res = await api(alice, 'POST', `/api/messages/${pivot}/tldr`);
      assert.equal(res.statusCode, 202);
      assert.equal(res.json().status, 'QUEUED');
      await mine.until((r) => r.some((e) => e.event === 'chat.tldr-ready'), 10_000);
      const ready = mine.received.find((e) => e.event === 'chat.tldr-ready')!;
      assert.equal(ready.data.requestId, res.json().requestId);
      assert.equal(ready.data.messageId, pivot);
      assert.equal(ready.data.messageCount, 5);
      assert.equal(ready.data.requestedLanguage, 'en');
      const summary = String(ready.data.summary);
      assert.match(summary, /Vienna train tickets/);
      assert.match(summary, /^• (Alice|Bob): /m);
      assert.ok(!summary.includes('Hi!'), 'small talk is left out');
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.equal(theirs.received.filter((e) => e.event === 'chat.tldr-ready').length, 0);
    } finally {
      mine.close();
      theirs.close();
    }
  });

  it('needs an enabled member; never in end-to-end encrypted rooms', async () => {
    const [owner, member, outsider] = await Promise.all([signIn(t), signIn(t), signIn(t)]);
    const room = await makeRoom(t, owner, { members: [member] });
    const id = (await api(owner, 'PUT', `/api/messages/${room.id}`, { roomId: room.id, message: 'Something worth summarizing here.' })).json();
    // An outsider of a private room hears what a missing message answers: ids cannot be probed.
    const probed = await api(outsider, 'POST', `/api/messages/${id}/tldr`);
    const missing = await api(outsider, 'POST', '/api/messages/ffffffffffffffffffffffff/tldr');
    assert.deepEqual([probed.statusCode, probed.json().code, probed.json().message], [missing.statusCode, missing.json().code, missing.json().message]);
    assert.equal(probed.json().code, 'MESSAGE_NOT_FOUND');
    await api(owner, 'POST', `/api/rooms/${room.id}/members/${member.userId}/enabled?enabled=false`);
    assert.equal((await api(member, 'POST', `/api/messages/${id}/tldr`)).json().code, 'NOT_A_MEMBER');
    assert.equal((await api(owner, 'POST', '/api/messages/ffffffffffffffffffffffff/tldr')).json().code, 'MESSAGE_NOT_FOUND');
    const e2ee = await makeRoom(t, owner, { type: 'E2EE' });
    const secret = (await api(owner, 'PUT', `/api/messages/${e2ee.id}`, { roomId: e2ee.id, message: randomBytes(48).toString('base64') })).json();
    assert.equal((await api(owner, 'POST', `/api/messages/${secret}/tldr`)).json().code, 'TLDR_NOT_IN_E2EE');
  });
});

describe('OpenAI-compatible summarizer adapter', () => {
  it('asks the chat completions endpoint for a summary in the requested language', async () => {
    let seen: { authorization?: string; body: { model: string; messages: { role: string; content: string }[] } } | null = null;
    const server = http.createServer((req, res) => {
      let text = '';
      req.on('data', (chunk) => (text += chunk));
      req.on('end', () => {
        seen = { authorization: req.headers.authorization, body: JSON.parse(text) };
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ choices: [{ message: { role: 'assistant', content: '• Bob bucht die Zugtickets nach Wien.' } }] }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    try {
      const summarizer = new OpenAiCompatibleSummarizer({ baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, apiKey: 'sk-test', model: 'tiny-model' });
      const summary = await summarizer.summarize([{ author: 'Bob', text: 'I will book the train tickets to Vienna.' }], 'de');
      assert.deepEqual(summary, { text: '• Bob bucht die Zugtickets nach Wien.', language: 'de' });
      assert.equal(seen!.authorization, 'Bearer sk-test');
      assert.equal(seen!.body.model, 'tiny-model');
      assert.match(seen!.body.messages[0]!.content, /"de"/);
      assert.equal(seen!.body.messages[1]!.content, 'Bob: I will book the train tickets to Vienna.');
    } finally {
      server.close();
    }
  });
});
