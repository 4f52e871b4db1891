import assert from 'node:assert/strict';
import { createCipheriv, createDecipheriv, createPrivateKey, createPublicKey, diffieHellman, generateKeyPairSync, hkdfSync, randomBytes } from 'node:crypto';
import type { AccountDoc } from '../../src/wallets/ledger.repo.js';
import type { ActivityDoc } from '../../src/apps/apps.repo.js';
import { after, before, describe, it } from 'node:test';
import { parse as parseCsv } from 'csv-parse/sync';
import { startTestApp, startTestWorkers, type Session, type TestApp } from '../helpers/app.js';
import type { Workers } from '../../workers/main.js';
import { walletWith } from '../helpers/wallets.js';
import { json, startAppServer, verifyAsAnApp, type AppServer, type ReceivedCall } from '../helpers/app-server.js';
import { connectAll, httpAs, makeRoom, makeUser } from '../helpers/factories.js';
import type { AddressInfo } from 'node:net';
import { answerLater } from '../../packages/app-sdk/src/index.js';

const X25519_SPKI = Buffer.from('302a300506032b656e032100', 'hex');
const INFO = 'service-apps/sealed/v1';

/** The phone's side of sealed answers, exactly as the spec builds them. */
function seal(appPublicKey: string, appId: string, values: Record<string, unknown>): string {
  const ephemeral = generateKeyPairSync('x25519');
  const shared = diffieHellman({ privateKey: ephemeral.privateKey, publicKey: createPublicKey({ key: Buffer.concat([X25519_SPKI, Buffer.from(appPublicKey, 'base64')]), format: 'der', type: 'spki' }) });
  const key = Buffer.from(hkdfSync('sha256', shared, Buffer.alloc(0), INFO, 32));
  const nonce = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, nonce);
  cipher.setAAD(Buffer.from(appId));
  const body = Buffer.concat([cipher.update(JSON.stringify({ values })), cipher.final(), cipher.getAuthTag()]);
  return Buffer.concat([ephemeral.publicKey.export({ format: 'der', type: 'spki' }).subarray(-32), nonce, body]).toString('base64url');
}

/** The app's side: opens what the phone sealed with its private key. */
function unseal(privateKey: ReturnType<typeof createPrivateKey>, appId: string, value: string): Record<string, unknown> {
  const bytes = Buffer.from(value, 'base64url');
  const shared = diffieHellman({ privateKey, publicKey: createPublicKey({ key: Buffer.concat([X25519_SPKI, bytes.subarray(0, 32)]), format: 'der', type: 'spki' }) });
  const key = Buffer.from(hkdfSync('sha256', shared, Buffer.alloc(0), INFO, 32));
  const decipher = createDecipheriv('aes-256-gcm', key, bytes.subarray(32, 44));
  decipher.setAAD(Buffer.from(appId));
  decipher.setAuthTag(bytes.subarray(-16));
  return (JSON.parse(Buffer.concat([decipher.update(bytes.subarray(44, -16)), decipher.final()]).toString()) as { values: Record<string, unknown> }).values;
}

type Body = Record<string, unknown> & { command: string | null; flow: string | null; step: string | null; values: Record<string, unknown> | null; action: { id: string; payload: Record<string, unknown> } | null; user: Record<string, unknown>; conversation: Record<string, unknown> | null; sealed: { alg: string; value: string } | null };

describe('app invocations: commands, forms, cards and their buttons, sealed answers', () => {
  let t: TestApp;
  let appServer: AppServer;
  let workers: Workers;
  let reply: (body: Body) => unknown = () => ({ type: 'ack', message: 'ok' });
  const api = httpAs(() => t);
  const sealing = generateKeyPairSync('x25519');
  before(async () => {
    t = await startTestApp({ WEBHOOK_ALLOW_PRIVATE: 'true', BOT_CARDS_PER_MINUTE: '3', WEBHOOK_RETRY_SCHEDULE: '0.3,0.3', APPS_FORM_TTL: '60' });
    workers = await startTestWorkers(t);
    appServer = await startAppServer((call: ReceivedCall, res) => {
      const parsed = JSON.parse(call.raw.toString()) as { type?: string };
      // The app added to (or removed from) a room is told so; these tests answer only calls and payment events.
      if (parsed.type === 'app.added' || parsed.type === 'app.removed') return void res.writeHead(204).end();
      // Cast: every other call here is an invocation or a payment event.
      const answer = reply(parsed as Body) as { status?: number };
      // `{status: 500}` stands for an app that fails.
      if (answer && typeof answer.status === 'number') json(res, { error: 'failing' }, answer.status);
      else json(res, answer);
    });
  });
  after(async () => {
    await workers.close();
    await appServer.close();
    await t.close();
  });

  const manifest = (scopes: string[] = [], sealingKey?: string) => ({
    version: '1.0.0',
    scopes,
    commands: [
      { id: 'hello', title: 'Hello' },
      { id: 'order', title: 'Order', flow: 'order-form' },
      { id: 'survey', title: 'Survey', flow: 'survey' },
      // Text and options travel unsealed: only an app without a sealing key declares them.
      ...(sealingKey
        ? []
        : [{ id: 'weather', title: 'Weather', argument: { label: 'city', required: true, maxLength: 40 }, options: [{ id: 'units', type: 'select', label: 'Units', rules: { options: [{ value: 'c', label: 'Celsius' }, { value: 'f', label: 'Fahrenheit' }] } }] }]),
    ],
    flows: [
      {
        id: 'order-form',
        mode: 'dynamic',
        views: [
          { id: 'size', title: 'Size', inputs: [{ id: 'size', type: 'select', label: 'Size', required: true, rules: { options: [{ value: 's', label: 'S' }, { value: 'l', label: 'L' }] } }] },
          { id: 'details', title: 'Details', inputs: [{ id: 'count', type: 'number', label: 'How many', required: true, rules: { min: 1, max: 10 } }, { id: 'note', type: 'text', label: 'Note', rules: { maxLength: 20 } }] },
        ],
      },
      { id: 'survey', mode: 'static', views: [{ id: 'q', title: 'Q', inputs: [{ id: 'when', type: 'date', label: 'When', required: true }, { id: 'ok', type: 'boolean', label: 'OK' }] }] },
    ],
    templates: [{ id: 'receipt', card: { blocks: [{ type: 'title', text: 'Order {{n}}' }, { type: 'text', text: '{{what}}, ready at {{ when }}' }] } }],
    ...(sealingKey ? { sealing: { publicKey: sealingKey } } : {}),
  });

  /** An app with a manifest, added to a room of the owner's, installed by the owner and `member`. */
  async function setUp(options: { scopes?: string[]; sealed?: boolean } = {}) {
    const [owner, member] = await Promise.all([makeUser(t), makeUser(t)]);
    const created = (await api(owner, 'POST', '/api/apps', { name: 'Pizza', webhookUrl: appServer.url })).json() as { id: string; webhookSecret: string };
    const key = options.sealed ? sealing.publicKey.export({ format: 'der', type: 'spki' }).subarray(-32).toString('base64') : undefined;
    const uploaded = await api(owner, 'PUT', `/api/apps/${created.id}/manifest`, manifest(options.scopes, key));
    assert.equal(uploaded.statusCode, 200, uploaded.body);
    const manifestHash = uploaded.json().manifestHash as string;
    await api(owner, 'PATCH', `/api/apps/${created.id}`, { public: true });
    const room = await makeRoom(t, owner, { members: [member] });
    assert.equal((await api(owner, 'POST', `/api/rooms/${room.id}/apps/${created.id}`)).statusCode, 204);
    const ids: Record<string, string> = {};
    for (const [name, s] of [['owner', owner], ['member', member]] as const) ids[name] = (await api(s, 'POST', `/api/apps/${created.id}/install`)).json().appUserId;
    return { owner, member, appId: created.id, secret: created.webhookSecret, manifestHash, roomId: room.id, ids };
  }
  const invoke = (s: Session, appId: string, body: object) => api(s, 'POST', `/api/apps/${appId}/invocations`, body);
  const lastBody = () => JSON.parse(appServer.calls.at(-1)!.raw.toString()) as Body;

  it('a room\'s app serves every member of the room; phones read what to show (issue 24, item 5)', async () => {
    const s = await setUp();
    // A member who never installed it, and an outsider.
    const [newcomer, outsider] = await Promise.all([makeUser(t), makeUser(t)]);
    await connectAll(t, s.owner, [newcomer]);
    assert.equal((await api(s.owner, 'POST', `/api/rooms/${s.roomId}/members/${newcomer.userId}`)).statusCode, 204);
    const listed = await api(newcomer, 'GET', `/api/rooms/${s.roomId}/apps`);
    assert.deepEqual(listed.json().map((a: { id: string }) => a.id), [s.appId]);
    assert.equal((await api(outsider, 'GET', `/api/rooms/${s.roomId}/apps`)).json().code, 'ROOM_NOT_FOUND');
    const shown = (await api(newcomer, 'GET', `/api/apps/${s.appId}/manifest?roomId=${s.roomId}`)).json();
    assert.deepEqual([shown.name, shown.installed, shown.manifestVersion], ['Pizza', false, '1.0.0']);
    assert.deepEqual(shown.manifest.commands.map((c: { id: string }) => c.id), ['hello', 'order', 'survey', 'weather']);
    // What a phone needs to offer `/weather <city>` with its options.
    assert.deepEqual([shown.manifest.commands[3].argument, shown.manifest.commands[3].options[0].id], [{ label: 'city', required: true, maxLength: 40 }, 'units']);
    assert.deepEqual(shown.manifest.flows[0].views[1].inputs[1], { id: 'note', type: 'text', label: 'Note', rules: { maxLength: 20 } });

    reply = () => ({ type: 'ack', message: 'Hi!' });
    const used = await invoke(newcomer, s.appId, { roomId: s.roomId, command: 'hello' });
    assert.equal(used.json().outcome, 'ack', used.body);
    const firstId = (lastBody().user as { id: string }).id;
    assert.equal((await invoke(newcomer, s.appId, { roomId: s.roomId, command: 'hello' })).json().outcome, 'ack');
    assert.equal((lastBody().user as { id: string }).id, firstId, 'one per-app id, made on first use');
    // Installing later keeps that id. Outside the room, or with no room, installing is still needed.
    const other = await makeRoom(t, newcomer);
    assert.equal((await invoke(newcomer, s.appId, { roomId: other.id, command: 'hello' })).json().code, 'APP_NOT_INSTALLED');
    assert.equal((await invoke(newcomer, s.appId, { command: 'hello' })).json().code, 'APP_NOT_INSTALLED');
    assert.equal((await api(newcomer, 'POST', `/api/apps/${s.appId}/install`)).json().appUserId, firstId);

    // An app that asks for the member's name needs their consent first: installing.
    const named = await setUp({ scopes: ['user.name'] });
    const guest = await makeUser(t);
    await connectAll(t, named.owner, [guest]);
    assert.equal((await api(named.owner, 'POST', `/api/rooms/${named.roomId}/members/${guest.userId}`)).statusCode, 204);
    const refused = await invoke(guest, named.appId, { roomId: named.roomId, command: 'hello' });
    assert.deepEqual([refused.statusCode, refused.json().code, refused.json().details], [400, 'APP_CONSENT_REQUIRED', [{ scopes: ['user.name'] }]]);
    await api(guest, 'POST', `/api/apps/${named.appId}/install`);
    assert.equal((await invoke(guest, named.appId, { roomId: named.roomId, command: 'hello' })).json().outcome, 'ack');
    // A private app nobody shares reads as missing to others.
    await api(named.owner, 'PATCH', `/api/apps/${named.appId}`, { public: false });
    assert.equal((await api(outsider, 'GET', `/api/apps/${named.appId}/manifest`)).json().code, 'APP_NOT_FOUND');

    // Unlisted now, and still in the room: a member who meets it there consents by installing it from
    // that room; without the room, or from a room it is not in, it is not found (and says how).
    const late = await makeUser(t);
    await connectAll(t, named.owner, [late]);
    assert.equal((await api(named.owner, 'POST', `/api/rooms/${named.roomId}/members/${late.userId}`)).statusCode, 204);
    assert.equal((await invoke(late, named.appId, { roomId: named.roomId, command: 'hello' })).json().code, 'APP_CONSENT_REQUIRED');
    const noRoom = (await api(late, 'POST', `/api/apps/${named.appId}/install`)).json();
    assert.deepEqual([noRoom.code, /\?roomId=/.test(noRoom.message)], ['APP_NOT_FOUND', true], JSON.stringify(noRoom));
    assert.equal((await api(late, 'POST', `/api/apps/${named.appId}/install?roomId=${other.id}`)).json().code, 'APP_NOT_FOUND', 'a room the app is not in');
    assert.equal((await api(outsider, 'POST', `/api/apps/${named.appId}/install?roomId=${named.roomId}`)).json().code, 'APP_NOT_FOUND', 'a room the caller is not in');
    assert.equal((await api(late, 'POST', `/api/apps/${named.appId}/install?roomId=${named.roomId}`)).statusCode, 200);
    assert.equal((await invoke(late, named.appId, { roomId: named.roomId, command: 'hello' })).json().outcome, 'ack');
    // One rule for who sees an app (AppsPolicy): having installed it, the member updates their install
    // without the room, and may report it; the outsider can do neither, as for no such app.
    assert.equal((await api(late, 'POST', `/api/apps/${named.appId}/install`)).statusCode, 200);
    const report = (s: Session) => api(s, 'POST', '/api/reports', { targetType: 'APP', targetId: named.appId, reason: 'SPAM' });
    assert.equal((await report(late)).statusCode, 200);
    const hidden = await report(outsider);
    assert.equal(hidden.statusCode, 400, hidden.body);
  });

  it('a command takes free text and typed options (/weather Berlin), checked at their edges, sent as text and values', async () => {
    const s = await setUp();
    reply = () => ({ type: 'ack', message: 'Sunny' });
    const weather = (fields: object) => invoke(s.member, s.appId, { roomId: s.roomId, command: 'weather', ...fields });
    assert.equal((await weather({ text: '  Berlin\u0007 ', values: { units: 'c' } })).json().outcome, 'ack');
    assert.deepEqual([lastBody().command, (lastBody() as { text?: unknown }).text, lastBody().values], ['weather', 'Berlin', { units: 'c' }]);
    assert.equal((await weather({ text: 'x'.repeat(40) })).json().outcome, 'ack', 'at the bound');
    const refusals = [
      [{ text: 'x'.repeat(41) }, 'INVOCATION_VALUES_INVALID', 'text: at most 40 characters'],
      [{}, 'INVOCATION_VALUES_INVALID', 'text: required (city)'],
      [{ text: ' \n ' }, 'INVOCATION_VALUES_INVALID', 'text: required'],
      [{ text: 'Paris', values: { units: 'k' } }, 'INVOCATION_VALUES_INVALID', 'units: not one of the options'],
      [{ text: 'Paris', values: { wind: true } }, 'INVOCATION_VALUES_INVALID', 'wind: not an input of this form'],
    ] as const;
    for (const [fields, code, message] of refusals) {
      const refused = (await weather(fields)).json();
      assert.deepEqual([refused.code, refused.message], [code, message], JSON.stringify(fields));
    }
    // A command that declares no argument takes no text.
    const noText = (await invoke(s.member, s.appId, { roomId: s.roomId, command: 'hello', text: 'Berlin' })).json();
    assert.deepEqual([noText.code, noText.message], ['INVOCATION_INVALID', 'This command takes no text']);
    // A command without text gets text: null.
    await invoke(s.member, s.appId, { roomId: s.roomId, command: 'hello' });
    assert.equal((lastBody() as { text?: unknown }).text, null);
  });

  it('sends exactly the spec\'s invocation body, signed, with the user and conversation fields its scopes allow', async () => {
    const plain = await setUp();
    reply = () => ({ type: 'ack', message: 'Hi!' });
    const res = await invoke(plain.member, plain.appId, { roomId: plain.roomId, command: 'hello' });
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual([res.json().outcome, res.json().message], ['ack', 'Hi!']);
    const body = lastBody();
    // The spec's fields, and `text` and `followUp` beyond them (a command's free text, null here; where a deferred answer goes).
    assert.deepEqual(Object.keys(body).sort(), ['action', 'app', 'command', 'conversation', 'flow', 'followUp', 'id', 'payload', 'sealed', 'step', 'text', 'ts', 'type', 'user', 'values']);
    assert.deepEqual(
      [body.type, body.id, body.app, body.command, body.flow, body.step, body.values, body.sealed, body.payload, body.action],
      ['invocation', res.json().invocationId, { id: plain.appId, version: '1.0.0', manifestHash: plain.manifestHash }, 'hello', null, null, {}, null, null, null],
    );
    assert.deepEqual(body.user, { id: plain.ids.member }, 'only the per-app id without scopes');
    assert.deepEqual(body.conversation, { roomType: 'PRIVATE_GROUP' }, 'no ref without its scope');
    assert.ok(verifyAsAnApp(plain.secret, appServer.calls.at(-1)!, Math.floor(Date.now() / 1000), new Set()));

    const scoped = await setUp({ scopes: ['user.name', 'user.language', 'conversation.ref'] });
    await api(scoped.member, 'PATCH', '/api/users/me', { displayName: 'Mia' });
    await invoke(scoped.member, scoped.appId, { roomId: scoped.roomId, command: 'hello' });
    const withScopes = lastBody();
    assert.deepEqual(withScopes.user, { id: scoped.ids.member, name: 'Mia', language: 'en' });
    assert.deepEqual(withScopes.conversation, { roomType: 'PRIVATE_GROUP', ref: scoped.roomId });

    // The test console: no room, and the owner before installing is a tester with another id.
    const tester = await setUp();
    await api(tester.owner, 'DELETE', `/api/apps/${tester.appId}/install`);
    const consoleCall = await api(tester.owner, 'POST', `/api/apps/${tester.appId}/test-invocations`, { command: 'hello' });
    assert.equal(consoleCall.json().outcome, 'ack', consoleCall.body);
    assert.equal(lastBody().conversation, null);
    assert.notEqual(lastBody().user.id, tester.ids.owner);
    assert.equal((await api(tester.member, 'POST', `/api/apps/${tester.appId}/test-invocations`, { command: 'hello' })).json().code, 'APP_NOT_FOUND', 'the owner\'s console only');
    assert.equal((await invoke(await makeUser(t), tester.appId, { command: 'hello' })).json().code, 'APP_NOT_INSTALLED');
  });

  it('checks every reply against its bounds, at the edge: ack, error, card in the room or private', async () => {
    const s = await setUp();
    const outcome = async (answer: unknown, on = s) => {
      reply = () => answer;
      return (await invoke(on.member, on.appId, { roomId: on.roomId, command: 'hello' })).json();
    };
    assert.equal((await outcome({ type: 'ack', message: 'x'.repeat(120) })).outcome, 'ack');
    const error = await outcome({ type: 'error', userMessage: 'y'.repeat(200), code: 'c'.repeat(64) });
    assert.deepEqual([error.outcome, error.userMessage], ['error', 'y'.repeat(200)]);
    const logged = await t.db.collection<ActivityDoc>('app_activity').find({ appId: s.appId }).sort({ createdAt: -1 }).limit(1).next();
    assert.equal(logged?.appErrorCode, 'c'.repeat(64), 'the code only in the activity log');
    // The console shows it (issue 24, item 6).
    const rows = (await api(s.owner, 'GET', `/api/apps/${s.appId}/activity`)).json().items as { appErrorCode: string | null; detail: string | null }[];
    assert.equal(rows[0]!.appErrorCode, 'c'.repeat(64));
    // Each breach is a contract failure (on an app of its own: five failures in a minute would open its breaker).
    // Each says what broke it, where (issue 24, item 6).
    for (const [breach, says] of [
      [{ type: 'ack', message: 'x'.repeat(121) }, /^message: /],
      [{ type: 'error', userMessage: 'y'.repeat(201) }, /^userMessage: /],
      [{ type: 'error', userMessage: 'y', code: 'c'.repeat(65) }, /^code: /],
      [{ type: 'view', view: { id: 'size', title: 'Size', blocks: [] } }, /a view answers only a step of a dynamic flow/],
      [{ type: 'payment', payment: { amount: '1', currency: 'USDT', reference: 'r', description: 'd', expiresIn: 600 } }, /payments scope/],
      [{ type: 'card', card: { blocks: [{ type: 'title', text: 't'.repeat(151) }] } }, /^card\.blocks\.0\.text: /],
      [{ type: 'card', card: { blocks: [{ type: 'sparkles' }] } }, /^card\.blocks\.0/],
      [{ type: 'card', template: 'receipt', data: { n: 7, what: 'Pizza' } }, /^template: receipt/],
      [{ type: 'card', template: 'invoice', data: {} }, /^template: invoice/],
      [{ type: 'card', template: 'receipt', data: { n: 7, what: 'x'.repeat(3000), when: 'noon' } }, /^template: receipt/],
      // Submit buttons are pressed on a room's message: a private card has none to press them on.
      [{ type: 'card', visibility: 'private', card: { blocks: [{ type: 'actions', buttons: [{ id: 'buy', label: 'Buy', kind: 'submit' }] }] } }, /^card: a private card cannot carry submit buttons/],
    ] as const) {
      const fresh = await setUp();
      const answer = await outcome(breach, fresh);
      assert.deepEqual([answer.outcome, answer.message], ['failed', 'The app\'s reply could not be shown'], JSON.stringify(breach));
      const row = await t.db.collection<ActivityDoc>('app_activity').find({ appId: fresh.appId }).sort({ createdAt: -1 }).limit(1).next();
      assert.equal(row?.failure, 'CONTRACT');
      assert.match(row?.detail ?? '', says, JSON.stringify(breach));
    }

    // A template of the manifest, filled with the reply's data.
    const filled = await outcome({ type: 'card', visibility: 'private', template: 'receipt', data: { n: 7, what: 'Pizza', when: 'noon' } });
    assert.deepEqual(filled.card, { blocks: [{ type: 'title', text: 'Order 7' }, { type: 'text', text: 'Pizza, ready at noon' }] });

    const card = { blocks: [{ type: 'title', text: 'Margherita' }, { type: 'fields', fields: [{ label: 'Price', value: '9.50' }] }, { type: 'actions', buttons: [{ id: 'buy', label: 'Buy', kind: 'submit', payload: { sku: 'm1' } }] }] };
    const inRoom = await outcome({ type: 'card', card });
    assert.deepEqual([inRoom.outcome, inRoom.visibility], ['card', 'room']);
    const messages = (await api(s.owner, 'GET', `/api/messages/${s.roomId}`)).json().items as { id: string; appId: string | null; userId: string; card: unknown }[];
    assert.deepEqual([messages[0]!.id, messages[0]!.appId, messages[0]!.userId, messages[0]!.card], [inRoom.messageId, s.appId, `app:${s.appId}`, card]);
    const privateCard = { blocks: card.blocks.slice(0, 2) };
    const privately = await outcome({ type: 'card', visibility: 'private', card: privateCard });
    assert.deepEqual([privately.visibility, privately.messageId], ['private', null]);
    assert.equal((await api(s.owner, 'GET', `/api/messages/${s.roomId}`)).json().items.length, messages.length, 'a private card is not posted');

    // Another member taps the card's submit button: the app is called as the tapper.
    reply = () => ({ type: 'ack', message: 'Bought' });
    const tapped = await invoke(s.owner, s.appId, { roomId: s.roomId, action: { messageId: inRoom.messageId, id: 'buy' } });
    assert.equal(tapped.json().outcome, 'ack', tapped.body);
    const tap = lastBody();
    // The app is told which message the pressed button is on (beyond the spec's {id, payload}).
    assert.deepEqual([tap.command, tap.flow, tap.values, tap.action, tap.user.id], [null, null, {}, { id: 'buy', payload: { sku: 'm1' }, messageId: inRoom.messageId }, s.ids.owner]);

    // The app answers a press by updating the card it was pressed on: the same message, a new card.
    const sold = { blocks: [{ type: 'title', text: 'Margherita' }, { type: 'text', text: 'Sold out' }] };
    reply = () => ({ type: 'card', update: true, card: sold });
    const updated = (await invoke(s.member, s.appId, { roomId: s.roomId, action: { messageId: inRoom.messageId, id: 'buy' } })).json();
    assert.deepEqual([updated.outcome, updated.visibility, updated.messageId, updated.card], ['card', 'room', inRoom.messageId, sold]);
    const after = (await api(s.owner, 'GET', `/api/messages/${s.roomId}`)).json().items as { id: string; card: unknown; editedAt: string | null }[];
    assert.equal(after.length, messages.length, 'no new message');
    const shownNow = after.find((m) => m.id === inRoom.messageId)!;
    assert.deepEqual([shownNow.card, typeof shownNow.editedAt], [sold, 'string']);
    // Update answers a press only: to a command it breaks the contract.
    reply = () => ({ type: 'card', update: true, card: sold });
    const notPressed = (await invoke(s.member, s.appId, { roomId: s.roomId, command: 'hello' })).json();
    assert.deepEqual([notPressed.outcome, notPressed.message], ['failed', 'The app\'s reply could not be shown'], JSON.stringify(notPressed));
    reply = () => ({ type: 'ack', message: 'Bought' });
    assert.equal((await invoke(s.owner, s.appId, { roomId: s.roomId, action: { messageId: inRoom.messageId, id: 'sell' } })).json().code, 'INVOCATION_INVALID');
    // A tap comes from the card's own room (issue 24, item 7): not from another room of the app, not from none.
    const elsewhere = await makeRoom(t, s.owner);
    assert.equal((await api(s.owner, 'POST', `/api/rooms/${elsewhere.id}/apps/${s.appId}`)).statusCode, 204);
    for (const roomId of [elsewhere.id, undefined]) {
      const misplaced = await invoke(s.owner, s.appId, { ...(roomId ? { roomId } : {}), action: { messageId: inRoom.messageId, id: 'buy' } });
      assert.deepEqual([misplaced.statusCode, misplaced.json().code], [400, 'INVOCATION_INVALID'], misplaced.body);
    }
  });

  it('checks answers against the manifest before sending, and runs a dynamic form of at most 8 steps', async () => {
    const s = await setUp();
    const bad: [object, string][] = [
      [{ command: 'order', step: 'size', values: {} }, 'size'],
      [{ command: 'order', step: 'size', values: { size: 'xl' } }, 'size'],
      [{ command: 'order', step: 'size', values: { size: 's', colour: 'red' } }, 'colour'],
      [{ command: 'survey', values: { when: '2026-13-45' } }, 'when'],
      [{ command: 'survey', values: { when: '2026-12-01', ok: 'yes' } }, 'ok'],
    ];
    const before = appServer.calls.length;
    for (const [body, inputId] of bad) {
      const res = await invoke(s.member, s.appId, { roomId: s.roomId, ...body });
      assert.deepEqual([res.statusCode, res.json().code], [400, 'INVOCATION_VALUES_INVALID'], res.body);
      assert.ok(JSON.stringify(res.json().details).includes(inputId), res.body);
    }
    assert.equal((await invoke(s.member, s.appId, { roomId: s.roomId, command: 'order', step: 'details', values: { count: 1 } })).json().code, 'INVOCATION_INVALID', 'a form starts at its first view');
    assert.equal((await invoke(s.member, s.appId, { roomId: s.roomId, command: 'nope' })).json().code, 'INVOCATION_INVALID');
    assert.equal(appServer.calls.length, before, 'nothing was sent');

    // The app answers with views: size, then details, again and again (titles and defaults may change).
    const views = {
      size: { id: 'size', title: 'Pick a size', blocks: [{ type: 'text', text: 'Which one?' }, { type: 'input', id: 'size', default: 'l' }] },
      details: { id: 'details', title: 'Details', blocks: [{ type: 'input', id: 'count', rules: { min: 1, max: 10 } }, { type: 'input', id: 'note' }] },
    };
    reply = (body) => ({ type: 'view', view: body.step === 'size' ? views.details : views.size });
    let invocationId: string | undefined;
    let step = 'size';
    for (let n = 1; n <= 7; n++) {
      const values = step === 'size' ? { size: 's' } : { count: n, note: 'extra cheese' };
      const res = await invoke(s.member, s.appId, { roomId: s.roomId, ...(invocationId ? { invocationId } : { command: 'order' }), step, values });
      assert.equal(res.json().outcome, 'view', `step ${n}: ${res.body}`);
      assert.equal(lastBody().id, invocationId ?? res.json().invocationId, 'one invocation id for every step');
      assert.deepEqual([lastBody().step, lastBody().values, lastBody().command], [step, values, 'order']);
      invocationId = res.json().invocationId;
      step = res.json().view.id;
    }
    // The 8th step finishes the form: another view there is a broken contract (nobody could answer it), and
    // a failed step leaves the form where it was, to be answered again (issue 24, item 7).
    const eighthValues = step === 'size' ? { size: 's' } : { count: 1 };
    const dead = await invoke(s.member, s.appId, { roomId: s.roomId, invocationId, step, values: eighthValues });
    assert.equal(dead.json().outcome, 'failed', dead.body);
    assert.match((await t.db.collection<ActivityDoc>('app_activity').find({ appId: s.appId }).sort({ createdAt: -1 }).limit(1).next())?.detail ?? '', /step 8 of a form finishes it/);
    reply = () => ({ type: 'ack', message: 'Ordered' });
    const finished = await invoke(s.member, s.appId, { roomId: s.roomId, invocationId, step, values: eighthValues });
    assert.equal(finished.json().outcome, 'ack', finished.body);
    const ninth = await invoke(s.member, s.appId, { roomId: s.roomId, invocationId, step, values: eighthValues });
    assert.deepEqual([ninth.statusCode, ninth.json().code], [400, 'INVOCATION_NOT_FOUND']);

    // A form waits APPS_FORM_TTL (30 minutes; 60 s in this file) for its next step; the clean-up removes forms after 30 days.
    reply = (body) => ({ type: 'view', view: body.step === 'size' ? views.details : views.size });
    const fresh = await invoke(s.member, s.appId, { roomId: s.roomId, command: 'order', step: 'size', values: { size: 's' } });
    const freshId = fresh.json().invocationId as string;
    t.clock.advance(61_000);
    try {
      const late = await invoke(s.member, s.appId, { roomId: s.roomId, invocationId: freshId, step: fresh.json().view.id, values: { size: 's' } });
      assert.deepEqual([late.statusCode, late.json().code], [400, 'INVOCATION_NOT_FOUND']);
    } finally {
      t.clock.advance(-61_000);
    }
    const removed = await t.ctx.services.maintenance.cleanupExpired(new Date(Date.now() + 31 * 86_400_000));
    assert.ok(removed.appForms >= 2, `${removed.appForms} forms removed`);
    assert.equal(await t.db.collection('app_invocations').countDocuments({ _id: freshId as never }), 0);

    // A view not in the flow, or one whose input rules changed, breaks the contract.
    for (const view of [{ id: 'payment', title: 'Pay', blocks: [] }, { ...views.details, blocks: [{ type: 'input', id: 'count', rules: { min: 0, max: 100 } }, { type: 'input', id: 'note' }] }]) {
      reply = () => ({ type: 'view', view });
      assert.equal((await invoke(s.member, s.appId, { roomId: s.roomId, command: 'order', step: 'size', values: { size: 'l' } })).json().outcome, 'failed');
    }
  });

  it('forwards sealed answers unread, which only the app can open', async () => {
    const s = await setUp({ sealed: true });
    let opened: Record<string, unknown> | null = null;
    reply = (body) => {
      opened = unseal(sealing.privateKey, s.appId, body.sealed!.value);
      return { type: 'ack', message: 'Got it' };
    };
    const answers = { when: '2026-12-24', ok: true };
    const res = await invoke(s.member, s.appId, { roomId: s.roomId, command: 'survey', sealed: { alg: 'x25519-hkdf-sha256-aes256gcm/v1', value: seal(sealing.publicKey.export({ format: 'der', type: 'spki' }).subarray(-32).toString('base64'), s.appId, answers) } });
    assert.equal(res.json().outcome, 'ack', res.body);
    assert.deepEqual(opened, answers);
    assert.deepEqual([lastBody().values, lastBody().sealed?.alg], [null, 'x25519-hkdf-sha256-aes256gcm/v1']);
    assert.equal((await invoke(s.member, s.appId, { roomId: s.roomId, command: 'survey', values: answers })).json().code, 'INVOCATION_INVALID', 'plain answers are refused when the app seals');
  });

  it('the app\'s bot token (made without a room) opens every room the app is in, while it is', async () => {
    const s = await setUp();
    const other = await makeRoom(t, s.owner, { members: [s.member] });
    const notIn = await makeRoom(t, s.owner);
    assert.equal((await api(s.owner, 'POST', `/api/rooms/${other.id}/apps/${s.appId}`)).statusCode, 204);
    const made = await api(s.owner, 'POST', `/api/apps/${s.appId}/bot-tokens`, {});
    assert.deepEqual([made.statusCode, made.json().roomId], [200, null], made.body);
    const say = (roomId: string) => t.app.inject({ method: 'POST', url: `/bot-api/v1/rooms/${roomId}/messages`, headers: { authorization: `Bearer ${made.json().token}` }, payload: { text: 'Hello' } });
    assert.deepEqual([(await say(s.roomId)).statusCode, (await say(other.id)).statusCode], [201, 201]);
    assert.deepEqual([(await say(notIn.id)).statusCode, (await say(notIn.id)).json().code], [403, 'BOT_TOKEN_OTHER_ROOM']);
    // Removed from a room: the app's token stops opening it, and keeps opening the others.
    assert.equal((await api(s.owner, 'DELETE', `/api/rooms/${other.id}/apps/${s.appId}`)).statusCode, 204);
    assert.deepEqual([(await say(other.id)).json().code, (await say(s.roomId)).statusCode], ['BOT_TOKEN_OTHER_ROOM', 201]);
  });

  it('a deferred answer comes later through the invocation\'s follow-up URL: a card into the room, or a private answer to the member\'s devices', async () => {
    const s = await setUp();
    reply = () => ({ type: 'deferred', message: 'Checking the oven' });
    const deferred = (await invoke(s.member, s.appId, { roomId: s.roomId, command: 'hello' })).json();
    assert.deepEqual([deferred.outcome, deferred.message], ['deferred', 'Checking the oven']);
    const { followUp } = lastBody() as unknown as { followUp: { url: string; expiresAt: number } };
    assert.ok(followUp.expiresAt > Date.now() / 1000 + 14 * 60, 'about 15 minutes');
    const path = new URL(followUp.url).pathname;
    const answer = (body: unknown, at = path) => t.app.inject({ method: 'POST', url: at, payload: body as object });

    // A card for the room: posted there as the app's message.
    const card = { blocks: [{ type: 'title', text: 'Your pizza is ready' }] };
    const posted = await answer({ type: 'card', card });
    assert.equal(posted.statusCode, 200, posted.body);
    const [newest] = (await api(s.member, 'GET', `/api/messages/${s.roomId}`)).json().items as { id: string; card: unknown }[];
    assert.deepEqual([posted.json().outcome, posted.json().messageId, newest!.card], ['card', newest!.id, card]);
    // An ack: to the member's devices.
    assert.equal((await answer({ type: 'ack', message: 'Out of the oven' })).statusCode, 200);
    const told = (await t.ctx.services.inbox.readAfter(s.member.deviceId, 0)).filter((e) => e.event === 'app.follow-up').map((e) => e.data as { outcome: string; message: string | null; invocationId: string });
    assert.deepEqual(told.map((e) => [e.outcome, e.message, e.invocationId]), [['ack', 'Out of the oven', deferred.invocationId]]);
    // Checked as a reply is; a view is not an answer here.
    assert.equal((await answer({ type: 'card', card: { blocks: [] } })).json().code, 'VALIDATION_FAILED');
    assert.equal((await answer({ type: 'view', view: { id: 'v', title: 'V', blocks: [] } })).json().code, 'VALIDATION_FAILED');
    // A forged or altered token: 401. Five answers, then 429.
    const forged = `${path.slice(0, -4)}AAAA`;
    assert.deepEqual([(await answer({ type: 'ack', message: 'x' }, forged)).statusCode, (await answer({ type: 'ack', message: 'x' }, forged)).json().code], [401, 'FOLLOW_UP_INVALID']);
    for (let i = 0; i < 2; i++) assert.equal((await answer({ type: 'ack', message: `update ${i}` })).statusCode, 200);
    // The SDK's answerLater, over real HTTP to the service (the URL's path on the port it listens on here).
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const origin = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
    assert.deepEqual(await answerLater(`${origin}${path}`, { type: 'error', userMessage: 'The oven broke' }), { outcome: 'error', messageId: null });
    assert.deepEqual([(await answer({ type: 'ack', message: 'one more' })).statusCode, (await answer({ type: 'ack', message: 'one more' })).json().code], [429, 'FOLLOW_UP_USED_UP']);
    // Expired after 15 minutes.
    const next = (await invoke(s.member, s.appId, { roomId: s.roomId, command: 'hello' })).json();
    assert.equal(next.outcome, 'deferred');
    const later = new URL((lastBody() as unknown as { followUp: { url: string } }).followUp.url).pathname;
    t.clock.advance(15 * 60_000 + 1_000);
    try {
      assert.equal((await answer({ type: 'ack', message: 'late' }, later)).json().code, 'FOLLOW_UP_INVALID');
    } finally {
      t.clock.advance(-(15 * 60_000 + 1_000));
    }
  });

  it('the owner deletes an app once no money is with it: gone for everyone, its tokens, installs and room places with it', async () => {
    const s = await setUp({ scopes: ['payments'] });
    const token = (await api(s.owner, 'POST', `/api/apps/${s.appId}/bot-tokens`, {})).json().token as string;
    // A payment sheet open: money may still move, so the app stays.
    reply = () => ({ type: 'payment', payment: { amount: '1', currency: 'USDT', reference: 'del-1', description: 'Tea', expiresIn: 600 } });
    const sheet = (await invoke(s.member, s.appId, { roomId: s.roomId, command: 'hello' })).json();
    assert.equal(sheet.outcome, 'payment', JSON.stringify(sheet));
    const refused = (await api(s.owner, 'DELETE', `/api/apps/${s.appId}`)).json();
    assert.deepEqual([refused.code, refused.message], ['APP_HOLDS_MONEY', 'The app cannot be deleted yet: 1 payment is open or being paid']);
    assert.equal((await api(s.member, 'POST', `/api/app-payments/${sheet.payment.id}/decline`)).statusCode, 200);
    assert.equal((await api(s.member, 'DELETE', `/api/apps/${s.appId}`)).json().code, 'APP_NOT_FOUND', 'only the owner');
    assert.equal((await api(s.owner, 'DELETE', `/api/apps/${s.appId}`)).statusCode, 204);
    assert.equal((await api(s.owner, 'DELETE', `/api/apps/${s.appId}`)).statusCode, 204, 'deleting again finishes, or changes nothing');
    assert.equal((await api(s.owner, 'GET', `/api/apps/${s.appId}`)).json().code, 'APP_NOT_FOUND');
    const posted = await t.app.inject({ method: 'POST', url: `/bot-api/v1/rooms/${s.roomId}/messages`, headers: { authorization: `Bearer ${token}` }, payload: { text: 'Hi' } });
    assert.equal(posted.statusCode, 401, 'its tokens revoked');
    assert.notEqual((await invoke(s.member, s.appId, { roomId: s.roomId, command: 'hello' })).statusCode, 200);
    const installed = (await api(s.member, 'GET', '/api/apps/installed')).json() as { appId: string }[];
    assert.ok(!installed.some((i) => i.appId === s.appId), 'members\' installs removed');
    assert.equal(await t.db.collection('room_apps').countDocuments({ appId: s.appId }), 0, 'out of every room');
  });

  it('the bot interface posts plain text too: cleaned and bounded as a member\'s post, into the token\'s room only', async () => {
    const s = await setUp();
    const other = await makeRoom(t, s.owner, { members: [s.member] });
    const token = (await api(s.owner, 'POST', `/api/apps/${s.appId}/bot-tokens`, { roomId: s.roomId })).json().token as string;
    const say = (roomId: string, text: string) => t.app.inject({ method: 'POST', url: `/bot-api/v1/rooms/${roomId}/messages`, headers: { authorization: `Bearer ${token}` }, payload: { text } });
    const posted = await say(s.roomId, 'Lunch\u0007 is here');
    assert.equal(posted.statusCode, 201, posted.body);
    const [newest] = (await api(s.member, 'GET', `/api/messages/${s.roomId}`)).json().items as { id: string; message: string; appId: string; card?: unknown }[];
    assert.deepEqual([newest!.id, newest!.message, newest!.appId, newest!.card ?? null], [posted.json().messageId, 'Lunch is here', s.appId, null]);
    assert.deepEqual([(await say(s.roomId, ' \n ')).json().code, (await say(s.roomId, 'x'.repeat(10_001))).json().code], ['MESSAGE_EMPTY', 'MESSAGE_TOO_LONG']);
    assert.equal((await say(s.roomId, 'x'.repeat(10_000))).statusCode, 201, 'at the limit');
    assert.deepEqual([(await say(other.id, 'Hi')).statusCode, (await say(other.id, 'Hi')).json().code], [403, 'BOT_TOKEN_OTHER_ROOM']);
  });

  it('the bot interface posts cards into the token\'s room only, with 401, 403, 400 and 429 as documented', async () => {
    const s = await setUp();
    const other = await makeRoom(t, s.owner, { members: [s.member] });
    assert.equal((await api(s.owner, 'POST', `/api/rooms/${other.id}/apps/${s.appId}`)).statusCode, 204);
    const token = (await api(s.owner, 'POST', `/api/apps/${s.appId}/bot-tokens`, { roomId: s.roomId })).json().token as string;
    const post = (roomId: string, body: object, authorization?: string) =>
      t.app.inject({ method: 'POST', url: `/bot-api/v1/rooms/${roomId}/cards`, headers: authorization ? { authorization } : {}, payload: body });
    const card = { blocks: [{ type: 'title', text: 'Lunch is here' }, { type: 'text', text: 'Come to the kitchen.' }] };

    const posted = await post(s.roomId, card, `Bearer ${token}`);
    assert.equal(posted.statusCode, 201, posted.body);
    const messages = (await api(s.member, 'GET', `/api/messages/${s.roomId}`)).json().items as { id: string; card: unknown; appId: string }[];
    assert.deepEqual([messages[0]!.id, messages[0]!.card, messages[0]!.appId], [posted.json().messageId, card, s.appId]);

    for (const authorization of [undefined, 'Bearer bbt_nope', `Bearer ${s.owner.accessToken}`, `Bearer ${token}x`]) {
      const res = await post(s.roomId, card, authorization);
      assert.deepEqual([res.statusCode, res.json().code], [401, 'BOT_TOKEN_INVALID'], String(authorization));
    }
    const elsewhere = await post(other.id, card, `Bearer ${token}`);
    assert.deepEqual([elsewhere.statusCode, elsewhere.json().code], [403, 'BOT_TOKEN_OTHER_ROOM']);
    const badBlocks = await post(s.roomId, { blocks: [{ type: 'title' }] }, `Bearer ${token}`);
    assert.deepEqual([badBlocks.statusCode, badBlocks.json().code], [400, 'VALIDATION_FAILED']);
    // An image over http: the error names the rule (https only) and the block.
    const httpImage = (await post(s.roomId, { blocks: [{ type: 'image', url: 'http://images.example.com/a.png', alt: 'A' }] }, `Bearer ${token}`)).json();
    assert.equal(httpImage.code, 'VALIDATION_FAILED');
    assert.ok(JSON.stringify(httpImage).includes('An image URL must be an absolute https:// URL') && JSON.stringify(httpImage).includes('blocks'), JSON.stringify(httpImage));
    assert.equal((await api(s.member, 'GET', `/api/messages/${other.id}`)).json().items.length, 0, 'nothing reached the other room');

    // Three cards a minute per token here: the budget passes, one more is 429.
    assert.equal((await post(s.roomId, card, `Bearer ${token}`)).statusCode, 201);
    assert.equal((await post(s.roomId, card, `Bearer ${token}`)).statusCode, 201);
    const over = await post(s.roomId, card, `Bearer ${token}`);
    assert.deepEqual([over.statusCode, over.json().code], [429, 'TOO_MANY_BOT_CARDS']);
    assert.ok(Number(over.headers['retry-after']) >= 1);

    // Removing the app from the room ends the token.
    await api(s.owner, 'DELETE', `/api/rooms/${s.roomId}/apps/${s.appId}`);
    assert.equal((await post(s.roomId, card, `Bearer ${token}`)).statusCode, 401);
  });

  it('in-chat payments: a payment reply opens a sheet; confirmed, declined and expired, each told to the app with retries', async () => {
    const s = await setUp({ scopes: ['payments'] });
    const usdt = await walletWith(t, s.member, 'USDT', 10_000_000n);
    const eth = await walletWith(t, s.member, 'ETH', 10n ** 18n);
    let n = 0;
    let failCompleted = 0;
    const events: Body[] = [];
    reply = (body) => {
      if (String(body.type).startsWith('payment.')) {
        events.push(body);
        if (body.type === 'payment.completed' && failCompleted-- > 0) return { status: 500 };
        return { type: 'ack', message: 'Thanks, your pizza is on its way' };
      }
      return { type: 'payment', payment: { amount: '2.5', currency: 'USDT', reference: `order-${++n}`, description: 'Margherita', expiresIn: 600, card: afterCard, declinedCard } };
    };
    const afterCard = { blocks: [{ type: 'text', text: 'Thank you for ordering' }] };
    const declinedCard = { blocks: [{ type: 'text', text: 'No pizza then: maybe next time' }] };
    const ask = async () => {
      const res = await invoke(s.member, s.appId, { roomId: s.roomId, command: 'hello' });
      assert.equal(res.json().outcome, 'payment', res.body);
      return res.json().payment as { id: string; amount: string; currency: string; reference: string; status: string; card: unknown };
    };
    const sheet = await ask();
    assert.deepEqual([sheet.amount, sheet.currency, sheet.reference, sheet.status, sheet.card], ['2.5', 'USDT', 'order-1', 'PENDING', null], 'the card waits for the answer');
    assert.equal((await api(s.member, 'POST', `/api/app-payments/${sheet.id}/confirm`, { walletId: eth })).json().code, 'APP_PAYMENT_CURRENCY');
    assert.equal((await api(s.owner, 'POST', `/api/app-payments/${sheet.id}/confirm`, { walletId: usdt })).json().code, 'APP_PAYMENT_NOT_FOUND', 'only the payer');

    const paid = await api(s.member, 'POST', `/api/app-payments/${sheet.id}/confirm`, { walletId: usdt });
    assert.equal(paid.statusCode, 200, paid.body);
    assert.deepEqual([paid.json().payment.status, paid.json().reply], ['COMPLETED', { outcome: 'ack', card: null, message: 'Thanks, your pizza is on its way', userMessage: null }]);
    assert.deepEqual(paid.json().payment.card, afterCard, 'shown once paid');
    assert.equal((await api(s.member, 'GET', `/api/wallets/${usdt}`)).json().available, '7.5');
    const appAccount = await t.db.collection<AccountDoc>('ledger_accounts').findOne({ _id: `app:${s.appId}:USDT` });
    assert.equal(appAccount?.available.toString(), '2500000');
    const completed = events.at(-1)!;
    assert.deepEqual(Object.keys(completed).sort(), ['app', 'id', 'payment', 'ts', 'type', 'user']);
    assert.deepEqual([completed.type, completed.app, completed.user], ['payment.completed', { id: s.appId }, { id: s.ids.member }]);
    const body = completed.payment as Record<string, unknown>;
    assert.deepEqual([body.id, body.kind, body.status, body.amount, body.currency, body.reference, body.description, typeof body.createdAt, typeof body.completedAt], [sheet.id, 'charge', 'completed', '2.5', 'USDT', 'order-1', 'Margherita', 'number', 'number']);
    assert.equal((await api(s.member, 'POST', `/api/app-payments/${sheet.id}/confirm`, { walletId: usdt })).json().code, 'APP_PAYMENT_CLOSED', 'paid once');

    // The app does not answer the first payment.completed: retried with the same delivery id, no reply shown.
    failCompleted = 1;
    const second = await ask();
    const late = await api(s.member, 'POST', `/api/app-payments/${second.id}/confirm`, { walletId: usdt });
    assert.deepEqual([late.json().payment.status, late.json().reply], ['COMPLETED', null]);
    const deadline = Date.now() + 5_000;
    const deliveriesOf = () => appServer.calls.filter((c) => (JSON.parse(c.raw.toString()) as Body).type === 'payment.completed' && ((JSON.parse(c.raw.toString()) as Body).payment as { id: string }).id === second.id);
    while (deliveriesOf().length < 2 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(deliveriesOf().length, 2);
    assert.equal(deliveriesOf()[0]!.headers['x-service-delivery'], deliveriesOf()[1]!.headers['x-service-delivery']);

    // Declined, and expired: nothing moves; the app is told through the queue.
    const third = await ask();
    const declined = (await api(s.member, 'POST', `/api/app-payments/${third.id}/decline`)).json();
    // Declined: the app's declined card, not the one for a payment made.
    assert.deepEqual([declined.status, declined.card], ['DECLINED', declinedCard]);
    const fourth = await ask();
    t.clock.advance(601_000);
    try {
      const swept = await t.ctx.services.appPayments.sweep();
      assert.deepEqual([swept.expired, swept.finished], [1, 0]);
      assert.equal((await api(s.member, 'POST', `/api/app-payments/${fourth.id}/confirm`, { walletId: usdt })).json().code, 'APP_PAYMENT_CLOSED');
    } finally {
      t.clock.advance(-601_000);
    }
    const told = Date.now() + 5_000;
    while (!(events.some((e) => e.type === 'payment.declined') && events.some((e) => e.type === 'payment.expired')) && Date.now() < told) await new Promise((resolve) => setTimeout(resolve, 50));
    assert.deepEqual(events.filter((e) => e.type !== 'payment.completed').map((e) => [e.type, (e.payment as { id: string; status: string }).id, (e.payment as { status: string }).status]), [
      ['payment.declined', third.id, 'declined'],
      ['payment.expired', fourth.id, 'expired'],
    ]);
    assert.equal((await api(s.member, 'GET', `/api/wallets/${usdt}`)).json().available, '5');

    // No event is lost (issue 24, item 2). The api dies between a payment's change and its event: the
    // change carries what is owed (the outbox), and the sweep records and sends it, once, under the
    // payment's own delivery id.
    const fifth = await ask();
    const stamp = new Date(Date.now() - 60_000);
    await t.db.collection('app_payments').updateOne({ _id: fifth.id as never }, { $set: { status: 'DECLINED', eventDue: 'payment.declined', updatedAt: stamp } });
    const owed = await t.ctx.services.appPayments.sweep();
    assert.equal(owed.eventsRecorded, 1);
    assert.equal((await t.ctx.services.appPayments.sweep()).eventsRecorded, 0, 'recorded once');
    const declinedCalls = () => appServer.calls.filter((c) => (JSON.parse(c.raw.toString()) as Body).type === 'payment.declined' && ((JSON.parse(c.raw.toString()) as Body).payment as { id: string }).id === fifth.id);
    const byOutbox = Date.now() + 5_000;
    while (declinedCalls().length < 1 && Date.now() < byOutbox) await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(declinedCalls().length, 1);
    assert.equal(declinedCalls()[0]!.headers['x-service-delivery'], `${fifth.id}-declined`);
    // A worker dies mid-attempt (its claim is held, its job gone): once the claim lapses the sweep
    // arms the delivery again, and the app gets it with the same delivery id.
    const orphan = `${fifth.id}-orphan`;
    await t.db.collection('app_deliveries').insertOne({
      _id: orphan as never, appId: s.appId, event: 'payment.declined', payload: JSON.stringify({ type: 'payment.declined', id: 'evt-orphan', ts: 1, app: { id: s.appId }, payment: { id: 'orphan' }, user: { id: 'u' } }),
      retry: true, attempts: 1, round: 0, status: 'PENDING', nextAttemptAt: new Date(Date.now() - 120_000), claimedUntil: new Date(Date.now() - 1_000), createdAt: stamp, updatedAt: stamp,
    });
    assert.ok((await t.ctx.services.appPayments.sweep()).deliveriesRearmed >= 1);
    const orphanCalls = () => appServer.calls.filter((c) => c.headers['x-service-delivery'] === orphan);
    const byRearm = Date.now() + 5_000;
    while (orphanCalls().length < 1 && Date.now() < byRearm) await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(orphanCalls().length, 1);
    assert.equal((await t.db.collection('app_deliveries').findOne({ _id: orphan as never }))?.status, 'DELIVERED');

    const books = await t.ctx.services.walletsReconciler.run();
    assert.deepEqual([books.mismatchedAccounts, books.negativeWallets, books.totals.USDT], [[], [], '0']);

    // Without the payments scope, a payment reply is a contract failure.
    const noScope = await setUp();
    reply = () => ({ type: 'payment', payment: { amount: '1', currency: 'USDT', reference: 'x', description: 'd', expiresIn: 600 } });
    assert.equal((await invoke(noScope.member, noScope.appId, { roomId: noScope.roomId, command: 'hello' })).json().outcome, 'failed');
  });

  it('a payment reply the service refuses is failed for the member and logged as refused, with why, in the list and the CSV alike', async () => {
    const s = await setUp({ scopes: ['payments'] });
    const asked = { amount: '1.1234567', reference: 'once' };
    reply = () => ({ type: 'payment', payment: { ...asked, currency: 'USDT', description: 'd', expiresIn: 600 } });
    const refused = async (why: RegExp) => {
      assert.equal((await invoke(s.member, s.appId, { roomId: s.roomId, command: 'hello' })).json().outcome, 'failed');
      const row = (await api(s.owner, 'GET', `/api/apps/${s.appId}/activity`)).json().items[0] as { id: string; outcome: string; failure: string; detail: string };
      assert.deepEqual([row.outcome, row.failure], ['FAILED', 'PAYMENT_REFUSED']);
      assert.match(row.detail, why);
      const csv = parseCsv((await api(s.owner, 'GET', `/api/apps/${s.appId}/activity.csv`)).body, { columns: true }) as Record<string, string>[];
      assert.deepEqual([csv[0]!.id, csv[0]!.outcome, csv[0]!.failure, csv[0]!.detail], [row.id, 'FAILED', 'PAYMENT_REFUSED', row.detail]);
    };
    await refused(/^payment\.amount: 1\.1234567 has more decimals than USDT has \(6\)$/);
    asked.amount = '1.5';
    assert.equal((await invoke(s.member, s.appId, { roomId: s.roomId, command: 'hello' })).json().outcome, 'payment');
    assert.equal((await api(s.owner, 'GET', `/api/apps/${s.appId}/activity`)).json().items[0].outcome, 'OK');
    await refused(/^payment\.reference: "once" was used by an earlier payment of this app$/);
  });

  it('the payments interface: look-ups, refunds never past the payment, payouts from the balance, each idempotent by key', async () => {
    const s = await setUp({ scopes: ['payments'] });
    const usdt = await walletWith(t, s.member, 'USDT', 10_000_000n);
    let n = 0;
    reply = (body) => (String(body.type).startsWith('payment.') ? { type: 'ack', message: 'ok' } : { type: 'payment', payment: { amount: '4', currency: 'USDT', reference: `ref-${++n}`, description: 'Pizza', expiresIn: 600 } });
    const pay = async () => {
      const sheet = (await invoke(s.member, s.appId, { roomId: s.roomId, command: 'hello' })).json().payment as { id: string };
      assert.equal((await api(s.member, 'POST', `/api/app-payments/${sheet.id}/confirm`, { walletId: usdt })).json().payment.status, 'COMPLETED');
      return sheet.id;
    };
    const [first, second] = [await pay(), await pay()];
    const key = (await api(s.owner, 'POST', `/api/apps/${s.appId}/payment-keys`)).json().token as string;
    const call = (method: 'GET' | 'POST', url: string, body?: object, idempotencyKey?: string, token = key) =>
      t.app.inject({ method, url, headers: { authorization: `Bearer ${token}`, ...(idempotencyKey ? { 'idempotency-key': idempotencyKey } : {}) }, ...(body ? { payload: body } : {}) });

    const looked = (await call('GET', `/app-api/v1/payments/${first}`)).json();
    assert.deepEqual([looked.id, looked.status, looked.amount, looked.refunded, looked.reference, looked.userId], [first, 'completed', '4', '0', 'ref-1', s.ids.member]);
    assert.equal((await call('GET', '/app-api/v1/payments?reference=ref-2')).json().id, second);
    assert.equal((await call('GET', `/app-api/v1/payments/${first}`, undefined, undefined, 'bpk_nope')).statusCode, 401);
    const otherApp = await setUp();
    const otherKey = (await api(otherApp.owner, 'POST', `/api/apps/${otherApp.appId}/payment-keys`)).json().token as string;
    assert.equal((await call('GET', `/app-api/v1/payments/${first}`, undefined, undefined, otherKey)).json().code, 'APP_PAYMENT_NOT_FOUND', 'another app\'s payment');

    const refund = (amount: string | undefined, idempotencyKey: string, paymentId = first) => call('POST', `/app-api/v1/payments/${paymentId}/refunds`, amount === undefined ? {} : { amount }, idempotencyKey);
    const partial = await refund('1.5', 'refund-key-1');
    assert.deepEqual([partial.statusCode, partial.json().status, partial.json().amount], [200, 'DONE', '1.5'], partial.body);
    assert.deepEqual((await refund('1.5', 'refund-key-1')).json(), partial.json(), 'the same key returns the first result');
    assert.equal((await refund('2', 'refund-key-1')).json().code, 'APP_IDEMPOTENCY_KEY_REUSED');
    assert.equal((await refund('2.500001', 'refund-key-2')).json().code, 'REFUND_EXCEEDS_PAYMENT');
    assert.equal((await refund(undefined, 'refund-key-3')).json().amount, '2.5', 'the rest');
    assert.equal((await refund('0.000001', 'refund-key-4')).json().code, 'REFUND_EXCEEDS_PAYMENT');
    assert.equal((await call('POST', `/app-api/v1/payments/${first}/refunds`, {})).statusCode, 400, 'the key is required');
    assert.equal((await call('GET', `/app-api/v1/payments/${first}`)).json().refunded, '4');
    assert.equal((await api(s.member, 'GET', `/api/wallets/${usdt}`)).json().available, '6');

    // Payouts from the balance (8 paid, 4 refunded).
    const payout = (amount: string, idempotencyKey: string, userId = s.ids.member) => call('POST', '/app-api/v1/payouts', { userId, amount, currency: 'USDT' }, idempotencyKey);
    assert.equal((await payout('1', 'payout-key-1')).json().status, 'DONE');
    assert.equal((await payout('1', 'payout-key-1')).json().status, 'DONE', 'paid once');
    assert.equal((await payout('3.000001', 'payout-key-2')).json().code, 'APP_BALANCE_SHORT');
    assert.equal((await payout('1', 'payout-key-3', 'u_nobody')).json().code, 'APP_MEMBER_NOT_FOUND');
    assert.deepEqual((await call('GET', '/app-api/v1/balance')).json().balances, [{ currency: 'ETH', available: '0' }, { currency: 'USDT', available: '3' }]);
    assert.equal((await api(s.member, 'GET', `/api/wallets/${usdt}`)).json().available, '7');
    // A refund the app's balance cannot cover is refused and takes nothing from what is left to refund.
    assert.equal((await payout('3', 'payout-key-4')).json().status, 'DONE');
    assert.equal((await refund('1', 'refund-key-5', second)).json().code, 'APP_BALANCE_SHORT');
    assert.equal((await call('GET', `/app-api/v1/payments/${second}`)).json().refunded, '0');
    const books = await t.ctx.services.walletsReconciler.run();
    assert.deepEqual([books.mismatchedAccounts, books.negativeWallets, books.totals.USDT], [[], [], '0']);
    // The member's devices were told of each refund and payout that moved money, once each.
    const told = (await t.ctx.services.inbox.readAfter(s.member.deviceId, 0)).filter((entry) => entry.event === 'wallet.app-money-received').map((entry) => entry.data as { kind: string; amount: string; paymentId: string | null; appName: string });
    assert.deepEqual(told.map((e) => [e.kind, e.amount, e.paymentId]), [['REFUND', '1.5', first], ['REFUND', '2.5', first], ['PAYOUT', '1', null], ['PAYOUT', '3', null]]);
    assert.ok(told.every((e) => typeof e.appName === 'string' && e.appName.length > 0));

    // Its own OpenAPI document, apart from /api's.
    const appApiDoc = (await t.app.inject({ url: '/v3/api-docs/app-api' })).json() as { paths: Record<string, unknown>; info: { title: string } };
    // With the bot interface and the keys apps verify with (issue 24, item 7).
    assert.deepEqual(Object.keys(appApiDoc.paths).sort(), [
      '/.well-known/jwks.json',
      '/app-api/v1/balance',
      '/app-api/v1/follow-ups/{token}',
      '/app-api/v1/payments',
      '/app-api/v1/payments/{paymentId}',
      '/app-api/v1/payments/{paymentId}/refunds',
      '/app-api/v1/payouts',
      '/bot-api/v1/rooms/{roomId}/cards',
      '/bot-api/v1/rooms/{roomId}/messages',
    ]);
    const apiDoc = (await t.app.inject({ url: '/v3/api-docs/api-traffic' })).json() as { paths: Record<string, unknown> };
    assert.ok(!Object.keys(apiDoc.paths).some((path) => path.startsWith('/app-api') || path.startsWith('/bot-api') || path.startsWith('/.well-known')));
  });

  it('test mode: test payments move no money and need no wallet; a test key sees, refunds and pays out test money only; all of it marked', async () => {
    const s = await setUp({ scopes: ['payments'] });
    let n = 0;
    const events: Body[] = [];
    reply = (body) => {
      if (String(body.type).startsWith('payment.')) {
        events.push(body);
        return { type: 'ack', message: 'ok' };
      }
      return { type: 'payment', payment: { amount: '5', currency: 'USDT', reference: `test-${++n}`, description: 'Pretend pizza', expiresIn: 600 } };
    };
    const turned = await api(s.owner, 'PATCH', `/api/apps/${s.appId}`, { testMode: true });
    assert.equal(turned.json().testMode, true, turned.body);
    const ask = async () => {
      const res = await invoke(s.member, s.appId, { roomId: s.roomId, command: 'hello' });
      assert.equal(res.json().outcome, 'payment', res.body);
      return res.json().payment as { id: string; test: boolean; status: string };
    };
    // The member has no wallet at all: a test payment needs none.
    const sheet = await ask();
    assert.equal(sheet.test, true, 'the sheet says it is a test');
    const paid = await api(s.member, 'POST', `/api/app-payments/${sheet.id}/confirm`, {});
    assert.equal(paid.statusCode, 200, paid.body);
    assert.deepEqual([paid.json().payment.status, paid.json().payment.test], ['COMPLETED', true]);
    assert.equal((await api(s.member, 'GET', '/api/wallets')).json().length, 0, 'no wallet was made or touched');
    assert.equal(await t.db.collection<{ _id: string }>('ledger_journal').countDocuments({ _id: `app-payment:${sheet.id}` }), 0, 'no ledger entry');
    const completed = events.find((e) => e.type === 'payment.completed') as { payment: { id: string; test?: boolean; status: string } } | undefined;
    assert.deepEqual([completed?.payment.id, completed?.payment.status, completed?.payment.test], [sheet.id, 'completed', true], 'the event says test');
    // Declined, too.
    const second = await ask();
    assert.equal((await api(s.member, 'POST', `/api/app-payments/${second.id}/decline`)).json().status, 'DECLINED');

    const testKey = (await api(s.owner, 'POST', `/api/apps/${s.appId}/payment-keys`, { test: true })).json() as { token: string; test: boolean; prefix: string };
    assert.ok(testKey.token.startsWith('bpk_test_') && testKey.test && testKey.prefix.startsWith('bpk_test_'), testKey.prefix);
    const liveKey = (await api(s.owner, 'POST', `/api/apps/${s.appId}/payment-keys`)).json().token as string;
    const call = (method: 'GET' | 'POST', url: string, token: string, body?: object, idempotencyKey?: string) =>
      t.app.inject({ method, url, headers: { authorization: `Bearer ${token}`, ...(idempotencyKey ? { 'idempotency-key': idempotencyKey } : {}) }, ...(body ? { payload: body } : {}) });
    // A test key's secret with the test marker taken off is no key at all.
    assert.equal((await call('GET', '/app-api/v1/balance', testKey.token.replace('bpk_test_', 'bpk_'))).statusCode, 401);
    const looked = (await call('GET', `/app-api/v1/payments/${sheet.id}`, testKey.token)).json();
    assert.deepEqual([looked.status, looked.test], ['completed', true]);
    assert.equal((await call('GET', `/app-api/v1/payments/${sheet.id}`, liveKey)).json().code, 'APP_PAYMENT_NOT_FOUND', 'a live key sees no test payment');
    assert.deepEqual((await call('GET', '/app-api/v1/balance', testKey.token)).json(), { balances: [{ currency: 'ETH', available: '0' }, { currency: 'USDT', available: '5' }], test: true });
    assert.deepEqual((await call('GET', '/app-api/v1/balance', liveKey)).json().balances[1], { currency: 'USDT', available: '0' }, 'the live balance untouched');

    const refunded = await call('POST', `/app-api/v1/payments/${sheet.id}/refunds`, testKey.token, { amount: '2' }, 'test-refund-1');
    assert.deepEqual([refunded.statusCode, refunded.json().status, refunded.json().test], [200, 'DONE', true], refunded.body);
    assert.equal((await call('POST', `/app-api/v1/payments/${sheet.id}/refunds`, testKey.token, { amount: '3.000001' }, 'test-refund-2')).json().code, 'REFUND_EXCEEDS_PAYMENT');
    const payout = (amount: string, key: string) => call('POST', '/app-api/v1/payouts', testKey.token, { userId: s.ids.member, amount, currency: 'USDT' }, key);
    assert.equal((await payout('3.000001', 'test-payout-1')).json().code, 'APP_BALANCE_SHORT', 'past the test balance (5 paid, 2 refunded)');
    const paidOut = await payout('3', 'test-payout-2');
    assert.deepEqual([paidOut.json().status, paidOut.json().test], ['DONE', true], paidOut.body);
    assert.deepEqual((await call('GET', '/app-api/v1/balance', testKey.token)).json().balances[1], { currency: 'USDT', available: '0' });
    // A live payout under the test key's idempotency key is another request: refused as reused, nothing moved.
    await walletWith(t, s.member, 'USDT', 0n);
    assert.equal((await call('POST', '/app-api/v1/payouts', liveKey, { userId: s.ids.member, amount: '3', currency: 'USDT' }, 'test-payout-2')).json().code, 'APP_IDEMPOTENCY_KEY_REUSED');
    const told = (await t.ctx.services.inbox.readAfter(s.member.deviceId, 0)).filter((entry) => entry.event === 'wallet.app-money-received').map((entry) => entry.data as { kind: string; amount: string; walletId: string | null; test: boolean });
    assert.deepEqual(told.map((e) => [e.kind, e.amount, e.walletId, e.test]), [['REFUND', '2', null, true], ['PAYOUT', '3', null, true]]);
    const books = await t.ctx.services.walletsReconciler.run();
    assert.deepEqual([books.mismatchedAccounts, books.negativeWallets], [[], []]);

    // The activity marks every row about a test payment: the reply that opened it and its events.
    const rows = (await api(s.owner, 'GET', `/api/apps/${s.appId}/activity?pageSize=50`)).json().items as { event: string; test: boolean; outcome: string }[];
    assert.ok(rows.filter((row) => row.event.startsWith('payment.')).every((row) => row.test), JSON.stringify(rows));
    assert.equal(rows.filter((row) => row.event === 'invocation' && row.test).length, 2, 'both invocations that opened one');
    // Live again: the next payment is live, and needs a wallet.
    await api(s.owner, 'PATCH', `/api/apps/${s.appId}`, { testMode: false });
    const live = await ask();
    assert.equal(live.test, false);
    assert.equal((await api(s.member, 'POST', `/api/app-payments/${live.id}/confirm`, {})).json().code, 'APP_PAYMENT_WALLET_REQUIRED');
  });
});
