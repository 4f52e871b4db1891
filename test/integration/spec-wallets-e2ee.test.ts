import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { freshPhone, signIn, startTestApp, type TestApp } from '../helpers/app.js';
import { registeredDevice, sealedBlob, shareBetween } from '../helpers/e2ee.js';
import { httpAs, makeRoom, makeUser, type HttpMethod } from '../helpers/factories.js';
import { DeviceClient, spawnHub, type HubProcess } from '../helpers/hubs.js';
import { multipart } from '../helpers/multipart.js';
import { walletWith, withBiometricKey } from '../helpers/wallets.js';
import { withdrawSigned } from '../../src/wallets/withdrawals.service.js';
import { bearer } from '../helpers/app.js';
import { BACKUP_CIPHERTEXT_MAX } from '../../src/e2ee/e2ee.schemas.js';

/**
 * The spec's rules for Wallets and End-to-end encryption that no other test walks on its own (issue 25,
 * item 4); the rest are in wallets, withdrawals, swaps, payment-requests, wallet-limits, biometric and
 * e2ee tests (docs/clients/e2ee.md, "The spec's wallet and encryption rules, and their tests").
 */
describe('the spec\'s wallet rules, at their edges', () => {
  let t: TestApp;
  const api = httpAs(() => t);
  before(async () => {
    t = await startTestApp();
  });
  after(() => t.close());

  const NONE = 'f0f0f0f0-0000-4000-8000-000000000000';
  const shape = (body: { status: number; code: string; message: string }) => ({ status: body.status, code: body.code, message: body.message });

  it('rule 1: on every route that takes a wallet, another member\'s wallet is the same 400 as none, and nothing changes', async () => {
    const [owner, stranger] = await Promise.all([makeUser(t), makeUser(t)]);
    const [eth, usdt] = [await walletWith(t, owner, 'ETH', 10n ** 17n), await walletWith(t, owner, 'USDT', 5_000_000n)];
    const [strangerEth, strangerUsdt] = [await walletWith(t, stranger, 'ETH', 10n ** 17n), await walletWith(t, stranger, 'USDT', 0n)];
    // The owner asks the stranger to pay: the stranger may pay it, from a wallet of their own only.
    const request = (await api(owner, 'POST', '/api/payment-requests', { walletId: eth, items: [{ recipientId: stranger.userId, amount: '0.01' }] })).json() as { id: string };
    // Each call names the owner's wallet; the same call with a wallet that does not exist must answer alike.
    const calls: [HttpMethod, string, (wallet: string) => object | undefined, (wallet: string) => string][] = [
      ['GET', 'read', () => undefined, (w) => `/api/wallets/${w}`],
      ['POST', 'rename', () => undefined, (w) => `/api/wallets/${w}?name=Mine`],
      ['POST', 'withdraw', (w) => ({ requestId: randomUUID(), walletId: w, toAddress: `0x${'1'.repeat(40)}`, amount: '0.001' }), () => '/api/wallet-withdrawals'],
      ['POST', 'transfer', (w) => [{ requestId: randomUUID(), fromWalletId: w, toUserId: stranger.userId, amount: '0.001' }], () => '/api/wallet-transactions'],
      ['GET', 'list swaps', () => undefined, (w) => `/api/wallet-swaps?walletId=${w}`],
      ['POST', 'quote from', (w) => ({ fromWalletId: w, toWalletId: strangerUsdt, amount: '0.01' }), () => '/api/wallet-swaps/quote'],
      ['POST', 'quote into', (w) => ({ fromWalletId: strangerEth, toWalletId: w, amount: '0.01' }), () => '/api/wallet-swaps/quote'],
      ['POST', 'request payment into', (w) => ({ walletId: w, items: [{ recipientId: owner.userId, amount: '1' }] }), () => '/api/payment-requests'],
      ['POST', 'pay from', (w) => ({ walletId: w }), () => `/api/payment-requests/${request.id}/pay`],
    ];
    for (const [method, name, body, url] of calls) {
      const theirs = await api(stranger, method, url(eth), body(eth));
      const none = await api(stranger, method, url(NONE), body(NONE));
      assert.deepEqual([theirs.statusCode, theirs.json().code], [400, 'WALLET_NOT_FOUND'], `${name}: ${theirs.body}`);
      assert.deepEqual(shape(theirs.json()), shape(none.json()), `${name}: the same answer as a wallet that does not exist`);
    }
    // The owner's wallets are as they were: named, funded and untouched.
    const after = (await api(owner, 'GET', '/api/wallets')).json() as { id: string; name: string; available: string }[];
    assert.deepEqual(after.map((w) => [w.id, w.name, w.available]), [[eth, 'ETH', '0.1'], [usdt, 'USDT', '5']]);
    assert.equal(await t.db.collection('wallet_withdrawals').countDocuments({ walletId: eth }), 0);
    assert.equal(await t.db.collection('wallet_swap_quotes').countDocuments({ $or: [{ fromWalletId: eth }, { toWalletId: eth }] }), 0);
  });

  it('Authentication rule 6: a withdrawal from a device with a biometric key needs its confirmation over these fields; 403 otherwise, nothing debited', async () => {
    const s = await makeUser(t);
    const wallet = await walletWith(t, s, 'ETH', 10n ** 17n);
    const key = await withBiometricKey(t, s);
    const body = { requestId: randomUUID(), walletId: wallet, toAddress: `0x${'2'.repeat(40)}`, amount: '0.001' };
    const withdraw = (extra: object) => api(s, 'POST', '/api/wallet-withdrawals', { ...body, ...extra });
    const unsigned = await withdraw({});
    assert.deepEqual([unsigned.statusCode, unsigned.json().code], [403, 'BIOMETRIC_CONFIRMATION_REQUIRED']);
    const n1 = await key.nonce();
    const otherAmount = await withdraw({ biometric: { nonce: n1, signature: key.signWith(withdrawSigned(n1, { ...body, amount: '0.002' })) } });
    assert.deepEqual([otherAmount.statusCode, otherAmount.json().code], [403, 'BIOMETRIC_CONFIRMATION_INVALID']);
    assert.equal((await api(s, 'GET', `/api/wallets/${wallet}`)).json().available, '0.1', 'nothing debited');
    assert.equal(await t.db.collection('wallet_withdrawals').countDocuments({ walletId: wallet }), 0);
    const n2 = await key.nonce();
    const signed = await withdraw({ biometric: { nonce: n2, signature: key.signWith(withdrawSigned(n2, body)) } });
    assert.equal(signed.statusCode, 200, signed.body);
    const replayed = await api(s, 'POST', '/api/wallet-withdrawals', { ...body, requestId: randomUUID(), biometric: { nonce: n2, signature: key.signWith(withdrawSigned(n2, body)) } });
    assert.equal(replayed.statusCode, 403, 'a nonce confirms once');
  });

  it('renaming: the name is required, its surrounding whitespace removed', async () => {
    const s = await makeUser(t);
    const wallet = await walletWith(t, s, 'ETH', 0n);
    const missing = await api(s, 'POST', `/api/wallets/${wallet}`);
    assert.equal(missing.statusCode, 400, missing.body);
    assert.equal((await api(s, 'POST', `/api/wallets/${wallet}?name=${encodeURIComponent('\t Travel \n')}`)).json().name, 'Travel');
  });

  it('swap list: pageSize at most 100 (default 20), currentPage zero-based, newest first', async () => {
    const s = await makeUser(t);
    const [eth, usdt] = [await walletWith(t, s, 'ETH', 10n ** 18n), await walletWith(t, s, 'USDT', 0n)];
    const made: string[] = [];
    for (const amount of ['0.001', '0.002', '0.003']) {
      const quote = (await api(s, 'POST', '/api/wallet-swaps/quote', { fromWalletId: eth, toWalletId: usdt, amount })).json() as { id: string };
      const swap = await api(s, 'POST', '/api/wallet-swaps', { quoteId: quote.id });
      assert.equal(swap.statusCode, 200, swap.body);
      made.push(swap.json().id);
    }
    const page = async (query: string) => api(s, 'GET', `/api/wallet-swaps?walletId=${eth}${query}`);
    const first = (await page('')).json();
    assert.deepEqual([first.pageSize, first.currentPage, first.items.map((i: { id: string }) => i.id)], [20, 0, [...made].reverse()]);
    assert.equal((await page('&pageSize=100')).statusCode, 200);
    for (const bad of ['&pageSize=101', '&pageSize=0', '&currentPage=-1', '&pageSize=x']) assert.equal((await page(bad)).statusCode, 400, bad);
    const second = (await page('&pageSize=2&currentPage=1')).json();
    assert.deepEqual(second.items.map((i: { id: string }) => i.id), [made[0]], 'page 1 of 2 per page holds the oldest');
    assert.equal((await api(s, 'GET', '/api/wallet-swaps')).statusCode, 400, 'walletId is required');
  });
});

describe('the spec\'s end-to-end encryption rules, at their edges', () => {
  let t: TestApp;
  let hub: HubProcess;
  const clients: DeviceClient[] = [];
  const api = httpAs(() => t);
  before(async () => {
    t = await startTestApp({ E2EE_KEY_CALLS_PER_MINUTE: '12' });
    hub = await spawnHub(t.config);
  });
  after(async () => {
    for (const client of clients) client.close();
    await hub.kill();
    await t.close();
  });

  const device = (phone?: string) => registeredDevice(t, phone);
  const share = shareBetween;

  it('backup rule 2: 400 when the version, the derivation, its parameters or the ciphertext are missing, unknown or too long; the limit itself passes', async () => {
    const s = await signIn(t);
    const good = { version: 1, kdf: 'argon2id', kdfParams: { salt: randomBytes(16).toString('base64'), memoryKiB: 65536, passes: 3, parallelism: 1 }, ciphertext: 'AAAA' };
    const longest = 'A'.repeat(BACKUP_CIPHERTEXT_MAX);
    for (const bad of [{ kdf: undefined }, { kdf: 'pbkdf1' }, { ciphertext: undefined }, { ciphertext: `${longest}AAAA` }, { kdfParams: 'salt' }, { kdfParams: [1, 2] }, { version: 1.5 }, { version: '2' }, { extra: true }]) {
      const res = await api(s, 'PUT', '/api/e2ee/backup', { ...good, ...bad });
      assert.deepEqual([res.statusCode, res.json().code], [400, 'VALIDATION_FAILED'], Object.keys(bad).join());
    }
    assert.equal((await api(s, 'GET', '/api/e2ee/backup')).statusCode, 204, 'nothing stored');
    assert.equal((await api(s, 'PUT', '/api/e2ee/backup', { ...good, ciphertext: longest })).statusCode, 204, 'exactly 16 MiB of text');
    assert.equal((await api(s, 'GET', '/api/e2ee/backup')).json().ciphertext.length, BACKUP_CIPHERTEXT_MAX);
  });

  it('key rules 3-5: only an active member reads, uploads or asks for keys; a member who left no longer does, nor is asked', async () => {
    const ownerPhone = freshPhone();
    const [owner, member] = await Promise.all([device(ownerPhone), device()]);
    const room = await makeRoom(t, owner.s, { type: 'E2EE', members: [member.s] });
    const key = randomBytes(32);
    assert.equal((await api(owner.s, 'POST', `/api/e2ee/rooms/${room.id}/keys`, { version: 1, create: true, shares: [share(owner, room.id, 1, owner, key), share(owner, room.id, 1, member, key)] })).statusCode, 204);
    assert.equal((await api(member.s, 'GET', `/api/e2ee/rooms/${room.id}/keys`)).json().currentVersion, 1);

    assert.equal((await api(member.s, 'POST', `/api/rooms/${room.id}/leave`)).statusCode, 204, 'the member leaves');
    for (const [method, url, body] of [
      ['GET', `/api/e2ee/rooms/${room.id}/keys`, undefined],
      ['POST', `/api/e2ee/rooms/${room.id}/keys`, { version: 1, shares: [share(member, room.id, 1, owner, key)] }],
      ['POST', `/api/e2ee/rooms/${room.id}/keys/request`, { version: 1 }],
    ] as const) {
      const res = await api(member.s, method, url, body);
      assert.deepEqual([res.statusCode, res.json().code], [400, 'NOT_A_MEMBER'], `${method} ${url}`);
    }

    // A new device of the owner asks: the owner's other device is asked, the one who left is not.
    const second = await device(ownerPhone);
    const onOwner = new DeviceClient(owner.s.accessToken);
    clients.push(onOwner);
    await onOwner.connect(hub.port);
    assert.equal((await api(second.s, 'POST', `/api/e2ee/rooms/${room.id}/keys/request`, { version: 1 })).statusCode, 204);
    await onOwner.until((r) => r.some((e) => e.event === 'e2ee.key-requested' && e.data.roomId === room.id && e.data.deviceId === second.s.deviceId));
    const sent = await t.db.collection<{ deviceId: string; deliveries: { deviceId: string }[] }>('e2ee_key_requests').findOne({ deviceId: second.s.deviceId });
    assert.deepEqual(sent?.deliveries.map((d) => d.deviceId), [owner.s.deviceId], 'sent to the owner\'s other device only: not to the member who left');
  });

  it('key rule 4: a malformed share and an out-of-range version are 400; nothing is stored', async () => {
    const [a, b] = await Promise.all([device(), device()]);
    const room = await makeRoom(t, a.s, { type: 'E2EE', members: [b.s] });
    const key = randomBytes(32);
    const both = (version: number) => [share(a, room.id, version, a, key), share(a, room.id, version, b, key)];
    const upload = (body: object) => api(a.s, 'POST', `/api/e2ee/rooms/${room.id}/keys`, body);
    const cases: [string, object, string][] = [
      ['wrapped key not base64', { version: 1, create: true, shares: both(1).map((s, i) => (i === 1 ? { ...s, wrappedKey: 'not base64!' } : s)) }, 'VALIDATION_FAILED'],
      ['wrapped key too long', { version: 1, create: true, shares: both(1).map((s, i) => (i === 1 ? { ...s, wrappedKey: 'A'.repeat(1028) } : s)) }, 'VALIDATION_FAILED'],
      ['signature missing', { version: 1, create: true, shares: both(1).map((s, i) => (i === 1 ? { deviceId: s.deviceId, wrappedKey: s.wrappedKey } : s)) }, 'VALIDATION_FAILED'],
      ['a device twice', { version: 1, create: true, shares: [...both(1), both(1)[1]] }, 'KEY_SHARE_INVALID'],
      ['version 0', { version: 0, create: true, shares: both(0) }, 'VALIDATION_FAILED'],
      ['version past the next', { version: 3, create: true, shares: both(3) }, 'KEY_VERSION_INVALID'],
      ['a fill-in of a version ahead', { version: 2, shares: both(2) }, 'KEY_VERSION_INVALID'],
    ];
    for (const [name, body, code] of cases) {
      const res = await upload(body);
      assert.deepEqual([res.statusCode, res.json().code], [400, code], `${name}: ${res.body}`);
    }
    assert.deepEqual((await api(a.s, 'GET', `/api/e2ee/rooms/${room.id}/keys`)).json().currentVersion, 0, 'nothing stored');
    assert.equal((await upload({ version: 1, create: true, shares: both(1) })).statusCode, 204);
  });

  it('429: key uploads and key requests share one budget per device', async () => {
    const d = await device();
    const room = await makeRoom(t, d.s, { type: 'E2EE' });
    const key = randomBytes(32);
    assert.equal((await api(d.s, 'POST', `/api/e2ee/rooms/${room.id}/keys`, { version: 1, create: true, shares: [share(d, room.id, 1, d, key)] })).statusCode, 204);
    for (let i = 0; i < 11; i++) assert.equal((await api(d.s, 'POST', `/api/e2ee/rooms/${room.id}/keys/request`, { version: 1 })).statusCode, 204, `call ${i + 2} of 12`);
    const over = await api(d.s, 'POST', `/api/e2ee/rooms/${room.id}/keys`, { version: 2, create: true, shares: [share(d, room.id, 2, d, key)] });
    assert.deepEqual([over.statusCode, over.json().code], [429, 'TOO_MANY_KEY_CALLS']);
    assert.ok(Number(over.headers['retry-after']) >= 1);
    assert.equal((await api(d.s, 'GET', `/api/e2ee/rooms/${room.id}/keys`)).json().currentVersion, 1, 'the refused upload stored nothing');
  });

  it('attachment rule 6: only a member who may publish uploads; a refusal stores nothing', async () => {
    const [owner, member] = await Promise.all([signIn(t), signIn(t)]);
    const room = await makeRoom(t, owner, { type: 'E2EE', members: [member] });
    assert.equal((await api(owner, 'POST', `/api/rooms/${room.id}/${member.userId}/publish-enabled?publishEnabled=false`)).statusCode, 204);
    const body = multipart([{ filename: 'a.bin', content: sealedBlob(randomBytes(100)) }]);
    const refused = await t.app.inject({ method: 'POST', url: `/api/e2ee/rooms/${room.id}/attachments`, headers: { ...bearer(member.accessToken), ...body.headers }, payload: body.payload });
    assert.deepEqual([refused.statusCode, refused.json().code], [400, 'PUBLISH_NOT_ALLOWED'], refused.body);
    assert.equal(await t.db.collection('attachments').countDocuments({ roomId: room.id }), 0);
  });
});
