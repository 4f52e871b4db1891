import assert from 'node:assert/strict';
import { createPublicKey, randomBytes, verify } from 'node:crypto';
import { deviceKeys, ED25519_SPKI, identityRequest, registeredDevice, sealedBlob, shareBetween, type Device, type Keys } from '../helpers/e2ee.js';
import { after, before, describe, it } from 'node:test';
import { freshPhone, signIn, startTestApp, type Session, type TestApp } from '../helpers/app.js';
import { httpAs, makeRoom } from '../helpers/factories.js';
import { DeviceClient, spawnHub, type HubProcess } from '../helpers/hubs.js';
import { multipart, type FilePart } from '../helpers/multipart.js';
import { bearer } from '../helpers/app.js';

describe('end-to-end encryption: identities, backups, room keys, key requests', () => {
  let t: TestApp;
  const hubs: HubProcess[] = [];
  const clients: DeviceClient[] = [];
  const api = httpAs(() => t);
  before(async () => {
    t = await startTestApp({ E2EE_KEY_CALLS_PER_MINUTE: '25', E2EE_UPLOADS_PER_MINUTE: '12', E2EE_ATTACHMENT_MAX_BYTES: '65536', E2EE_UNUSED_UPLOAD_TTL: '3600' });
    hubs.push(...(await Promise.all([spawnHub(t.config), spawnHub(t.config)])));
  });
  after(async () => {
    for (const client of clients) client.close();
    await Promise.all(hubs.map((hub) => hub.kill()));
    await t.close();
  });

  const connect = async (s: Session, hub: number) => {
    const client = new DeviceClient(s.accessToken);
    clients.push(client);
    await client.connect(hubs[hub]!.port);
    return client;
  };
  const register = (s: Session, keys: Keys) => api(s, 'PUT', '/api/e2ee/identity', identityRequest(s.deviceId, keys));
  const device = (phone?: string) => registeredDevice(t, phone);
  const share = shareBetween;
  const upload = (from: Device, roomId: string, body: object) => api(from.s, 'POST', `/api/e2ee/rooms/${roomId}/keys`, body);
  const keysOf = async (d: Device, roomId: string) => {
    const res = await api(d.s, 'GET', `/api/e2ee/rooms/${roomId}/keys`);
    assert.equal(res.statusCode, 200, res.body);
    return res.json() as { currentVersion: number; rotationDue: boolean; shares: { version: number; wrappedKey: string; fromDeviceId: string; fromSigningKey: string; signature: string }[] };
  };

  it('registers identity keys once per device, with a proof; a forged proof and bad keys are refused', async () => {
    const s = await signIn(t);
    const keys = deviceKeys();
    const other = deviceKeys();
    const body = (proof: string, extra: object = {}) => ({ encryptionKey: keys.encryptionKey, signingKey: keys.signingKey, proof, ...extra });
    // Signed by another key, or over another device's id: refused, nothing stored.
    for (const proof of [other.sign(`E2EE_IDENTITY_V1|${s.deviceId}|${keys.encryptionKey}|${keys.signingKey}`), keys.sign(`E2EE_IDENTITY_V1|someone-else|${keys.encryptionKey}|${keys.signingKey}`)]) {
      const res = await api(s, 'PUT', '/api/e2ee/identity', body(proof));
      assert.equal(res.statusCode, 400);
      assert.equal(res.json().code, 'IDENTITY_PROOF_INVALID');
    }
    const proof = keys.sign(`E2EE_IDENTITY_V1|${s.deviceId}|${keys.encryptionKey}|${keys.signingKey}`);
    for (const bad of [{ encryptionKey: randomBytes(31).toString('base64') }, { signingKey: randomBytes(33).toString('base64') }, { encryptionKey: keys.signingKey.slice(0, -4) + 'AAA=' }]) {
      const res = await api(s, 'PUT', '/api/e2ee/identity', body(proof, bad));
      assert.equal(res.statusCode, 400, res.body);
    }
    assert.equal((await register(s, keys)).statusCode, 204);
    // A second registration, even a valid one with new keys, is 409, and the first keys stay.
    const second = await register(s, other);
    assert.equal(second.statusCode, 409);
    assert.equal(second.json().code, 'IDENTITY_EXISTS');
    const stored = await t.ctx.repos.e2ee.findIdentity(s.deviceId);
    assert.equal(stored?.signingKey, keys.signingKey);
  });

  it('keeps one backup per user, by increasing version, returned byte for byte to its owner only', async () => {
    const s = await signIn(t);
    const stranger = await signIn(t);
    assert.equal((await api(s, 'GET', '/api/e2ee/backup')).statusCode, 204);
    const ciphertext = randomBytes(3 * 1024 * 1024).toString('base64');
    const first = { version: 3, kdf: 'argon2id', kdfParams: { salt: randomBytes(16).toString('base64'), memoryKiB: 65536, passes: 3, parallelism: 1 }, ciphertext };
    assert.equal((await api(s, 'PUT', '/api/e2ee/backup', first)).statusCode, 204);
    const got = await api(s, 'GET', '/api/e2ee/backup');
    assert.equal(got.statusCode, 200);
    const backup = got.json();
    assert.equal(backup.ciphertext, ciphertext, 'the ciphertext comes back exactly');
    assert.deepEqual([backup.version, backup.kdf, backup.kdfParams], [3, 'argon2id', first.kdfParams]);
    assert.equal(got.headers.etag, `"${backup.etag}"`);
    assert.equal((await api(stranger, 'GET', '/api/e2ee/backup')).statusCode, 204, 'only its owner sees it');

    for (const version of [3, 2]) {
      const res = await api(s, 'PUT', '/api/e2ee/backup', { ...first, version, ciphertext: 'AAAA' });
      assert.equal(res.statusCode, 409);
      assert.equal(res.json().code, 'BACKUP_VERSION_CONFLICT');
      assert.deepEqual(res.json().details, [{ storedVersion: 3 }]);
    }
    for (const bad of [{ version: undefined }, { kdf: 'md5' }, { kdfParams: undefined }, { kdfParams: { salt: 'x'.repeat(1100) } }, { ciphertext: '' }, { ciphertext: 'not base64!' }, { version: 0 }]) {
      const res = await api(s, 'PUT', '/api/e2ee/backup', { ...first, version: 9, ...bad });
      assert.equal(res.statusCode, 400, JSON.stringify(bad));
    }
    assert.equal((await api(s, 'GET', '/api/e2ee/backup')).json().ciphertext, ciphertext, 'refusals change nothing');

    // Another device of the user replaces it: the etag tells the first device.
    const next = { version: 4, kdf: 'scrypt', kdfParams: { N: 32768, r: 8, p: 1 }, ciphertext: randomBytes(1000).toString('base64') };
    assert.equal((await api(s, 'PUT', '/api/e2ee/backup', next)).statusCode, 204);
    const replaced = (await api(s, 'GET', '/api/e2ee/backup')).json();
    assert.deepEqual([replaced.version, replaced.ciphertext], [4, next.ciphertext]);
    assert.notEqual(replaced.etag, backup.etag);
    assert.equal((await api(s, 'DELETE', '/api/e2ee/backup')).statusCode, 204);
    assert.equal((await api(s, 'GET', '/api/e2ee/backup')).statusCode, 204);
    assert.equal((await api(s, 'DELETE', '/api/e2ee/backup')).statusCode, 204);
  });

  it('room keys: every eligible device in a new version, one winner per version, fill-ins, rotation after a removal', async () => {
    const alicePhone = freshPhone();
    const a1 = await device(alicePhone);
    const [a2, b1] = await Promise.all([device(alicePhone), device()]);
    const carol = await signIn(t); // no identity yet
    const room = await makeRoom(t, a1.s, { type: 'E2EE', members: [b1.s, carol] });
    const plain = await makeRoom(t, a1.s, { members: [b1.s] });
    const outsider = await device();
    const roomKey = randomBytes(32);
    const all = (version: number, from: Device, key = roomKey, to = [a1, a2, b1]) => to.map((d) => share(from, room.id, version, d, key));

    assert.equal((await api(a1.s, 'GET', `/api/e2ee/rooms/${plain.id}/keys`)).json().code, 'ROOM_NOT_E2EE');
    assert.equal((await api(outsider.s, 'GET', `/api/e2ee/rooms/${room.id}/keys`)).json().code, 'NOT_A_MEMBER');
    assert.deepEqual(await keysOf(a1, room.id), { roomId: room.id, currentVersion: 0, rotationDue: false, shares: [] });

    const refusals: [object, number, string][] = [
      [{ version: 1, create: true, shares: all(1, a1).slice(0, 2) }, 400, 'KEY_SHARES_INCOMPLETE'],
      [{ version: 2, create: true, shares: all(1, a1) }, 400, 'KEY_SHARE_INVALID'], // signed for version 1
      [{ version: 2, create: true, shares: all(2, a1) }, 400, 'KEY_VERSION_INVALID'],
      [{ version: 1, create: true, shares: [...all(1, a1), { deviceId: carol.deviceId, wrappedKey: 'AAAA', signature: a1.keys.sign(`E2EE_SHARE_V1|${room.id}|1|${carol.deviceId}|AAAA`) }] }, 400, 'KEY_SHARE_RECIPIENT_INVALID'],
      [{ version: 1, create: true, shares: [...all(1, a1), share(a1, room.id, 1, outsider, roomKey)] }, 400, 'KEY_SHARE_RECIPIENT_INVALID'],
      [{ version: 1, create: true, shares: all(1, a1).map((s, i) => (i === 1 ? { ...s, signature: b1.keys.sign(`E2EE_SHARE_V1|${room.id}|1|${s.deviceId}|${s.wrappedKey}`) } : s)) }, 400, 'KEY_SHARE_INVALID'],
      [{ version: 1, shares: all(1, a1) }, 400, 'KEY_VERSION_INVALID'], // a fill-in of a version that does not exist
    ];
    for (const [body, status, code] of refusals) {
      const res = await upload(a1, room.id, body);
      assert.deepEqual([res.statusCode, res.json().code], [status, code], res.body);
    }
    assert.equal((await keysOf(a1, room.id)).currentVersion, 0, 'refusals change nothing');
    const noIdentity = await api(carol, 'POST', `/api/e2ee/rooms/${room.id}/keys`, { version: 1, create: true, shares: all(1, a1) });
    assert.equal(noIdentity.json().code, 'DEVICE_MAY_NOT_RECEIVE_KEYS');

    // Two devices make version 1 at the same moment, each with its own key: one wins, the other gets 409.
    const bobKey = randomBytes(32);
    const [fromAlice, fromBob] = await Promise.all([upload(a1, room.id, { version: 1, create: true, shares: all(1, a1) }), upload(b1, room.id, { version: 1, create: true, shares: all(1, b1, bobKey) })]);
    assert.deepEqual([fromAlice.statusCode, fromBob.statusCode].sort(), [204, 409]);
    const loser = fromAlice.statusCode === 409 ? fromAlice : fromBob;
    assert.equal(loser.json().code, 'KEY_VERSION_TAKEN');
    const [winner, winnerKey] = fromAlice.statusCode === 204 ? [a1, roomKey] : [b1, bobKey];
    for (const d of [a1, a2, b1]) {
      const mine = await keysOf(d, room.id);
      assert.equal(mine.currentVersion, 1);
      assert.equal(mine.shares.length, 1);
      const [copy] = mine.shares;
      assert.equal(copy!.fromDeviceId, winner.s.deviceId);
      const signer = createPublicKey({ key: Buffer.concat([ED25519_SPKI, Buffer.from(copy!.fromSigningKey, 'base64')]), format: 'der', type: 'spki' });
      assert.ok(verify(null, Buffer.from(`E2EE_SHARE_V1|${room.id}|1|${d.s.deviceId}|${copy!.wrappedKey}`), signer, Buffer.from(copy!.signature, 'base64')), 'who produced it is checkable');
      assert.deepEqual(d.keys.unwrap(copy!.wrappedKey), winnerKey, 'each device opens the same room key');
    }

    // Carol's device registers: the room's devices hear of it (on both hub nodes), and she gets a fill-in, once.
    const [onA1, onB1] = await Promise.all([connect(a1.s, 0), connect(b1.s, 1)]);
    const carolKeys = deviceKeys();
    assert.equal((await register(carol, carolKeys)).statusCode, 204);
    const c1: Device = { s: carol, keys: carolKeys };
    for (const client of [onA1, onB1]) {
      await client.until((r) => r.some((e) => e.event === 'e2ee.device-added' && e.data.deviceId === carol.deviceId && e.data.roomId === room.id));
      await client.until((r) => r.some((e) => e.event === 'e2ee.rotation-due' && e.data.roomId === room.id && e.data.reason === 'DEVICE_ADDED'));
    }
    const fill = { version: 1, shares: [share(a1, room.id, 1, c1, winnerKey)] };
    assert.equal((await upload(a1, room.id, fill)).statusCode, 204);
    const again = await upload(b1, room.id, { version: 1, shares: [share(b1, room.id, 1, c1, bobKey)] });
    assert.deepEqual([again.statusCode, again.json().code], [400, 'KEY_SHARE_EXISTS']);
    assert.deepEqual(c1.keys.unwrap((await keysOf(c1, room.id)).shares[0]!.wrappedKey), winnerKey, 'the first share is kept');

    // Bob is removed: a rotation is due, and his device is no longer one that may receive the key.
    assert.equal((await api(a1.s, 'DELETE', `/api/rooms/${room.id}/members/${b1.s.userId}`)).statusCode, 204);
    await onA1.until((r) => r.some((e) => e.event === 'e2ee.rotation-due' && e.data.roomId === room.id && e.data.reason === 'MEMBER_LEFT'));
    assert.equal((await keysOf(a1, room.id)).rotationDue, true);
    const rotated = randomBytes(32);
    const withBob = await upload(a1, room.id, { version: 2, create: true, shares: all(2, a1, rotated, [a1, a2, c1, b1]) });
    assert.deepEqual([withBob.statusCode, withBob.json().code], [400, 'KEY_SHARE_RECIPIENT_INVALID']);
    assert.equal((await upload(a1, room.id, { version: 2, create: true, shares: all(2, a1, rotated, [a1, a2, c1]) })).statusCode, 204);
    const after = await keysOf(c1, room.id);
    assert.deepEqual([after.currentVersion, after.rotationDue, after.shares.map((s) => s.version)], [2, false, [1, 2]]);
    assert.deepEqual(c1.keys.unwrap(after.shares[1]!.wrappedKey), rotated);
  });

  it('key requests reach every other eligible device on every node, wait in inboxes, and are withdrawn once answered', async () => {
    const alicePhone = freshPhone();
    const a1 = await device(alicePhone);
    const [a2, b1] = await Promise.all([device(alicePhone), device()]);
    const bobPhone = freshPhone();
    const b2 = await device(bobPhone);
    const room = await makeRoom(t, a1.s, { type: 'E2EE', members: [b1.s, b2.s] });
    const roomKey = randomBytes(32);
    assert.equal((await upload(a1, room.id, { version: 1, create: true, shares: [a1, a2, b1, b2].map((d) => share(a1, room.id, 1, d, roomKey)) })).statusCode, 204);
    // A new device of Bob's, after version 1: it lacks the key and asks for it.
    const b3 = await device(bobPhone);
    const [onA1, onB1] = await Promise.all([connect(a1.s, 0), connect(b1.s, 1)]);
    const onB3 = await connect(b3.s, 0);

    const noIdentity = await signIn(t, bobPhone);
    const refused = await api(noIdentity, 'POST', `/api/e2ee/rooms/${room.id}/keys/request`, { version: 1 });
    assert.deepEqual([refused.statusCode, refused.json().code], [400, 'DEVICE_MAY_NOT_RECEIVE_KEYS']);
    assert.equal((await api(b3.s, 'POST', `/api/e2ee/rooms/${room.id}/keys/request`, { version: 2 })).json().code, 'KEY_VERSION_INVALID');

    assert.equal((await api(b3.s, 'POST', `/api/e2ee/rooms/${room.id}/keys/request`, { version: 1 })).statusCode, 204);
    const asked = (e: { event: string; data: Record<string, unknown> }) => e.event === 'e2ee.key-requested' && e.data.roomId === room.id && e.data.deviceId === b3.s.deviceId;
    await onA1.until((r) => r.some(asked));
    await onB1.until((r) => r.some(asked));
    const requestId = onA1.received.find(asked)!.data.requestId;
    // Asking again while it is open sends nothing more; the asking device is never asked.
    assert.equal((await api(b3.s, 'POST', `/api/e2ee/rooms/${room.id}/keys/request`, { version: 1 })).statusCode, 204);
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(onA1.received.filter(asked).length, 1);
    assert.equal(onB3.received.filter(asked).length, 0);

    // Alice's second device was offline: it finds the request in its inbox when it connects.
    const onA2 = await connect(a2.s, 1);
    await onA2.until((r) => r.some((e) => asked(e) && e.data.requestId === requestId));

    // Bob's phone b1 answers. Bob's b2, offline all along, then finds no request, only the notice that it was answered.
    assert.equal((await upload(b1, room.id, { version: 1, shares: [share(b1, room.id, 1, b3, b1.keys.unwrap((await keysOf(b1, room.id)).shares[0]!.wrappedKey))] })).statusCode, 204);
    assert.deepEqual(b3.keys.unwrap((await keysOf(b3, room.id)).shares[0]!.wrappedKey), roomKey);
    const stored = await t.db.collection<{ _id: string; status: string }>('e2ee_key_requests').findOne({ _id: requestId as string });
    assert.equal(stored?.status, 'ANSWERED');
    const onB2 = await connect(b2.s, 1);
    await onB2.until((r) => r.some((e) => e.event === 'e2ee.key-request-answered' && e.data.requestId === requestId));
    assert.equal(onB2.received.filter(asked).length, 0, 'an answered request is not delivered again');
  });

  it('a signed-out device may no longer receive keys, and its rooms are due a rotation', async () => {
    const phone = freshPhone();
    const d1 = await device(phone);
    const d2 = await device(phone);
    const other = await device();
    const room = await makeRoom(t, other.s, { type: 'E2EE', members: [d1.s] });
    const key = randomBytes(32);
    assert.equal((await upload(other, room.id, { version: 1, create: true, shares: [other, d1, d2].map((d) => share(other, room.id, 1, d, key)) })).statusCode, 204);
    const watching = await connect(other.s, 1);
    assert.equal((await api(d1.s, 'DELETE', `/api/devices/${d2.s.deviceId}`)).statusCode, 204);
    await watching.until((r) => r.some((e) => e.event === 'e2ee.rotation-due' && e.data.roomId === room.id && e.data.reason === 'DEVICE_REVOKED'));
    assert.equal((await keysOf(other, room.id)).rotationDue, true);
    const withRevoked = await upload(other, room.id, { version: 2, create: true, shares: [other, d1, d2].map((d) => share(other, room.id, 2, d, key)) });
    assert.deepEqual([withRevoked.statusCode, withRevoked.json().code], [400, 'KEY_SHARE_RECIPIENT_INVALID']);
    assert.equal((await upload(other, room.id, { version: 2, create: true, shares: [other, d1].map((d) => share(other, room.id, 2, d, key)) })).statusCode, 204);
  });

  it('limits key calls per device: the budget passes, one more is 429 with Retry-After', async () => {
    const d = await device();
    const room = await makeRoom(t, d.s, { type: 'E2EE' });
    assert.equal((await upload(d, room.id, { version: 1, create: true, shares: [share(d, room.id, 1, d, randomBytes(32))] })).statusCode, 204);
    const answers = [];
    for (let i = 0; i < 24; i++) answers.push((await api(d.s, 'POST', `/api/e2ee/rooms/${room.id}/keys/request`, { version: 1 })).statusCode);
    assert.deepEqual(new Set(answers), new Set([204]), 'the 25th key call of the minute still passes');
    const over = await api(d.s, 'POST', `/api/e2ee/rooms/${room.id}/keys/request`, { version: 1 });
    assert.equal(over.statusCode, 429);
    assert.equal(over.json().code, 'TOO_MANY_KEY_CALLS');
    assert.ok(Number(over.headers['retry-after']) >= 1 && Number(over.headers['retry-after']) <= 60);
    // Another device has its own budget (counted before anything else is checked).
    const other = await device();
    assert.equal((await api(other.s, 'POST', `/api/e2ee/rooms/${room.id}/keys/request`, { version: 1 })).json().code, 'NOT_A_MEMBER');
  });

  const uploadEncrypted = (s: Session, roomId: string, files: FilePart[]) => {
    const body = multipart(files);
    return t.app.inject({ method: 'POST', url: `/api/e2ee/rooms/${roomId}/attachments`, headers: { ...bearer(s.accessToken), ...body.headers }, payload: body.payload });
  };

  it('encrypted attachments: header and size checked, taken once by a message of their uploader, opened by ticket, unused ones cleaned up', async () => {
    const [owner, member, outsider] = await Promise.all([signIn(t), signIn(t), signIn(t)]);
    const room = await makeRoom(t, owner, { type: 'E2EE', members: [member] });
    const plainRoom = await makeRoom(t, owner, { members: [member] });
    const blob = sealedBlob(randomBytes(5000));
    const thumbnail = sealedBlob(randomBytes(300));
    const res = await uploadEncrypted(owner, room.id, [{ filename: 'a.bin', content: blob }, { filename: 't.bin', content: thumbnail, field: 'thumbnail' }]);
    assert.equal(res.statusCode, 200, res.body);
    const { attachmentId, size } = res.json();
    assert.equal(size, blob.length + thumbnail.length);

    const refused: [Session, string, FilePart[], number, string][] = [
      [owner, plainRoom.id, [{ filename: 'a.bin', content: blob }], 400, 'ROOM_NOT_E2EE'],
      [outsider, room.id, [{ filename: 'a.bin', content: blob }], 400, 'NOT_A_MEMBER'],
      [owner, room.id, [{ filename: 'a.bin', content: Buffer.concat([Buffer.from('E2A2'), blob.subarray(4)]) }], 400, 'ENCRYPTED_ATTACHMENT_INVALID'],
      [owner, room.id, [{ filename: 'a.bin', content: blob.subarray(0, 31) }], 400, 'ENCRYPTED_ATTACHMENT_INVALID'],
      [owner, room.id, [{ filename: 'a.bin', content: blob }, { filename: 't.png', content: randomBytes(100), field: 'thumbnail' }], 400, 'ENCRYPTED_ATTACHMENT_INVALID'],
      [owner, room.id, [{ filename: 't.bin', content: thumbnail, field: 'thumbnail' }], 400, 'ENCRYPTED_ATTACHMENT_INVALID'],
      // The limit (64 KiB here) counts blob and thumbnail together: one byte more is refused.
      [owner, room.id, [{ filename: 'a.bin', content: sealedBlob(randomBytes(65536 - 32 - 300)) }, { filename: 't.bin', content: thumbnail, field: 'thumbnail' }], 413, 'ENCRYPTED_ATTACHMENT_TOO_LARGE'],
    ];
    for (const [who, roomId, files, status, code] of refused) {
      const answer = await uploadEncrypted(who, roomId, files);
      assert.deepEqual([answer.statusCode, answer.json().code], [status, code], answer.body);
    }
    const exact = await uploadEncrypted(member, room.id, [{ filename: 'a.bin', content: sealedBlob(randomBytes(65536 - 32)) }]);
    assert.deepEqual([exact.statusCode, exact.json().size], [200, 65536], 'exactly the limit passes');
    const membersUpload = exact.json().attachmentId as string;

    // A message of the uploader takes it, once; another member's upload, or an unknown id, is refused.
    const ciphertext = randomBytes(64).toString('base64');
    const post = (s: Session, ids: string[]) => api(s, 'PUT', `/api/messages/${room.id}`, { roomId: room.id, message: ciphertext, attachmentIds: ids });
    assert.equal((await post(owner, [attachmentId, membersUpload])).json().code, 'ATTACHMENT_NOT_FOUND');
    const posted = await post(owner, [attachmentId]);
    assert.equal(posted.statusCode, 200, posted.body);
    const messageId = posted.json() as string;
    assert.equal((await post(owner, [attachmentId])).json().code, 'ATTACHMENT_NOT_FOUND', 'each upload is used once');
    assert.equal((await api(owner, 'PUT', `/api/messages/${plainRoom.id}`, { roomId: plainRoom.id, message: 'hi', attachmentIds: [membersUpload] })).json().code, 'ATTACHMENT_NOT_FOUND');
    const read = (await api(member, 'GET', `/api/messages/${room.id}`)).json();
    assert.deepEqual(read.items[0].attachmentIds, [attachmentId]);

    // Members open it through a ticket link, byte for byte, the thumbnail too.
    const ticket = await api(member, 'POST', `/api/messages/${messageId}/attachments/${attachmentId}/ticket`);
    assert.equal(ticket.statusCode, 200, ticket.body);
    const url = new URL(ticket.json().url);
    const file = await t.app.inject({ url: url.pathname });
    assert.deepEqual([file.statusCode, file.headers['content-type']], [200, 'application/octet-stream']);
    assert.deepEqual(file.rawPayload, blob);
    assert.deepEqual((await t.app.inject({ url: `${url.pathname}?variant=thumbnail` })).rawPayload, thumbnail);

    // The clean-up, a day later: the upload no message took is deleted, the used one stays.
    const unused = (await uploadEncrypted(owner, room.id, [{ filename: 'a.bin', content: sealedBlob(randomBytes(100)) }])).json().attachmentId as string;
    const collection = t.db.collection<{ _id: string; storageKey: string }>('attachments');
    const unusedKey = (await collection.findOne({ _id: unused }))!.storageKey;
    const early = await t.ctx.services.maintenance.cleanupExpired(new Date(Date.now() + 3_500_000));
    assert.equal(early.unusedEncryptedUploads, 0, 'not before its time');
    const later = await t.ctx.services.maintenance.cleanupExpired(new Date(Date.now() + 3_700_000));
    assert.ok(later.unusedEncryptedUploads >= 2, 'the unused upload and the member\'s are deleted');
    assert.equal(await collection.countDocuments({ _id: { $in: [unused, membersUpload] } }), 0);
    assert.equal(await t.ctx.platform.storage.size(unusedKey), null);
    assert.deepEqual((await t.app.inject({ url: url.pathname })).rawPayload, blob, 'the used one stays');
  });

  it('limits encrypted uploads per device: the budget passes, one more is 429 with Retry-After', async () => {
    const s = await signIn(t);
    const room = await makeRoom(t, s, { type: 'E2EE' });
    const blob = sealedBlob(randomBytes(100));
    const answers = [];
    for (let i = 0; i < 12; i++) answers.push((await uploadEncrypted(s, room.id, [{ filename: 'a.bin', content: blob }])).statusCode);
    assert.deepEqual(new Set(answers), new Set([200]));
    const over = await uploadEncrypted(s, room.id, [{ filename: 'a.bin', content: blob }]);
    assert.deepEqual([over.statusCode, over.json().code], [429, 'TOO_MANY_KEY_CALLS']);
    assert.ok(Number(over.headers['retry-after']) >= 1);
  });
});
