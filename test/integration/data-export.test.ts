import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import type { Workers } from '../../workers/main.js';
import { bearer, freshPhone, signIn, startTestApp, startTestWorkers, type TestApp } from '../helpers/app.js';
import { connect, httpAs, makeRoom, makeUser, postMessage } from '../helpers/factories.js';
import { DeviceClient, spawnHub, type HubProcess } from '../helpers/hubs.js';
import { multipart } from '../helpers/multipart.js';
import { walletWith } from '../helpers/wallets.js';

const exec = promisify(execFile);

/** Reads a ZIP with Python's zipfile (a reader nobody here wrote): each entry's name and text (or size, for binary files). */
async function readZip(file: string): Promise<Record<string, string | number>> {
  const script = [
    'import json, sys, zipfile',
    'z = zipfile.ZipFile(sys.argv[1])',
    'assert z.testzip() is None',
    'out = {}',
    'for info in z.infolist():',
    '    data = z.read(info.filename)',
    '    out[info.filename] = data.decode() if info.filename.endswith((".json", ".txt")) else len(data)',
    'print(json.dumps(out))',
  ].join('\n');
  const { stdout } = await exec('python3', ['-c', script, file]);
  return JSON.parse(stdout) as Record<string, string | number>;
}

describe('exporting one\'s data (issue 46, item 2)', () => {
  let t: TestApp;
  let workers: Workers;
  let hub: HubProcess;
  let work: string;
  const api = httpAs(() => t);
  const clients: DeviceClient[] = [];

  before(async () => {
    t = await startTestApp();
    workers = await startTestWorkers(t);
    hub = await spawnHub(t.config);
    work = await mkdtemp(path.join(os.tmpdir(), 'data-export-'));
  });
  after(async () => {
    for (const client of clients) client.close();
    await rm(work, { recursive: true, force: true });
    await hub?.kill();
    await workers?.close();
    await t?.close();
  });

  it('builds a ZIP of JSON files with what the user wrote and uploaded, and nothing of anyone else\'s private data; one a day; a short-lived link; deleted after 7 days', async () => {
    const phone = freshPhone();
    const friendPhone = freshPhone();
    const [user, friend] = [await signIn(t, phone), await signIn(t, friendPhone)];
    const other = await makeUser(t);
    await connect(t, user, friend);
    const room = await makeRoom(t, user, { members: [friend] });
    await postMessage(t, user, room.id, 'Mine, to export');
    const friends = await postMessage(t, friend, room.id, 'The friend\'s own words');
    // A reply quoting the friend: what the user wrote goes into the export, the friend's words do not.
    await postMessage(t, user, room.id, 'Mine, answering', { replyToId: friends });
    const picture = Buffer.from('not really a picture, but bytes the user uploaded');
    // Names in other scripts, and one with a NUL and a tab, travel into the ZIP's entry names cleaned.
    const named = ['Счёт.txt', '会议 记录.txt', '🎉.txt', 'nul\u0000ta\tb.txt'];
    const body = multipart(
      [{ filename: 'notes.bin', content: picture, contentType: 'application/octet-stream' }, ...named.map((filename) => ({ filename, content: Buffer.from(filename) }))],
      { payload: JSON.stringify({ roomId: room.id, message: 'With a file' }) },
    );
    const uploaded = await t.app.inject({ method: 'POST', url: `/api/messages/${room.id}/attachments`, headers: { ...bearer(user.accessToken), ...body.headers }, payload: body.payload });
    assert.equal(uploaded.statusCode, 204, uploaded.body);
    const walletId = await walletWith(t, user, 'USDT', 1_250_000n);

    const phoneSocket = new DeviceClient(user.accessToken);
    clients.push(phoneSocket);
    await phoneSocket.connect(hub.port);
    const asked = await api(user, 'POST', '/api/users/me/export');
    assert.equal(asked.statusCode, 202, asked.body);
    assert.equal(asked.json().status, 'QUEUED');
    const again = await api(user, 'POST', '/api/users/me/export');
    assert.equal(again.statusCode, 429);
    assert.equal(again.json().code, 'EXPORT_TOO_SOON');
    assert.ok(Number(again.headers['retry-after']) > 23 * 3600);

    await phoneSocket.until((received) => received.some((e) => e.event === 'account.export-ready'), 20_000);
    const ready = phoneSocket.received.find((e) => e.event === 'account.export-ready')!.data as { exportId: string; url: string };
    assert.equal(ready.exportId, asked.json().id);
    const download = await t.app.inject({ url: new URL(ready.url).pathname });
    assert.equal(download.statusCode, 200);
    assert.equal(download.headers['content-type'], 'application/zip');
    const archive = path.join(work, 'export.zip');
    await writeFile(archive, download.rawPayload);
    const entries = await readZip(archive);

    assert.deepEqual(
      Object.keys(entries).filter((name) => !name.startsWith('attachments/')).sort(),
      ['README.txt', 'apps.json', 'attachments.json', 'contacts.json', 'devices.json', 'messages.json', 'profile.json', 'rooms.json', 'wallets.json'],
    );
    const json = (name: string) => JSON.parse(entries[name] as string);
    assert.equal(json('profile.json').phone, phone);
    const messages = json('messages.json') as { message: string }[];
    assert.deepEqual(messages.map((m) => m.message).sort(), ['Mine, answering', 'Mine, to export', 'With a file']);
    assert.deepEqual((json('contacts.json').connections as { userId: string }[]).map((c) => c.userId), [friend.userId]);
    assert.ok((json('rooms.json') as { roomId: string; role: string }[]).some((r) => r.roomId === room.id && r.role === 'CREATOR'));
    const wallet = (json('wallets.json') as { id: string; available: string; history: unknown[] }[]).find((w) => w.id === walletId);
    assert.equal(wallet?.available, '1.25');
    assert.ok(wallet.history.length >= 1);
    const files = json('attachments.json') as { id: string; filename: string; storageKey?: string }[];
    assert.equal(files.length, 5);
    assert.ok(files.every((file) => file.storageKey === undefined), 'where the bytes are stored is not exported');
    const notes = files.find((file) => file.filename === 'notes.bin')!;
    assert.equal(entries[`attachments/${notes.id}/notes.bin`], picture.length);
    for (const kept of ['Счёт.txt', '会议 记录.txt', '🎉.txt', 'nultab.txt']) {
      const file = files.find((f) => f.filename === kept);
      assert.ok(file, `${kept} in attachments.json: ${JSON.stringify(files.map((f) => f.filename))}`);
      assert.ok(`attachments/${file.id}/${kept}` in entries, `the ZIP entry of ${kept}: ${Object.keys(entries).join(', ')}`);
    }
    assert.equal(download.headers['x-content-type-options'], 'nosniff');
    assert.match(String(download.headers['content-security-policy']), /sandbox/);
    const everything = Object.values(entries).filter((v) => typeof v === 'string').join('\n');
    for (const secret of [friendPhone, 'The friend\'s own words', user.refreshToken, other.userId]) assert.ok(!everything.includes(secret), `the archive holds ${secret}`);

    // A fresh link any time while the archive lives; another member cannot see the export.
    const fresh = await api(user, 'GET', `/api/users/me/exports/${ready.exportId}`);
    assert.equal(fresh.json().status, 'READY');
    assert.ok(fresh.json().url.includes('/exports/'));
    assert.equal((await api(other, 'GET', `/api/users/me/exports/${ready.exportId}`)).json().code, 'EXPORT_NOT_FOUND');
    // An attachment's ticket opens no export, and a link expires.
    assert.equal((await t.app.inject({ url: '/exports/not-a-valid-ticket-at-all' })).statusCode, 401);
    t.clock.advance(10 * 60_000);
    try {
      assert.equal((await t.app.inject({ url: new URL(ready.url).pathname })).statusCode, 401, 'the link outlived its few minutes');
    } finally {
      t.clock.advance(-10 * 60_000);
    }

    // After 7 days the archive and its record are gone.
    t.clock.advance(8 * 24 * 3_600_000);
    try {
      assert.ok((await t.ctx.services.accountExports.sweep()) >= 1);
    } finally {
      t.clock.advance(-8 * 24 * 3_600_000);
    }
    assert.equal((await t.app.inject({ url: new URL(fresh.json().url).pathname })).statusCode, 401);
    assert.equal(await t.db.collection('account_exports').countDocuments({ userId: user.userId }), 0);
  });
});
