import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { filesUnder, projectRoot } from '../helpers/files.js';
import { SHARD_KEYS, shardKeyFields } from '../../src/platform/shard-keys.js';

/** Every collection the source names (`collection('name')`, `collection<Doc>('name')`). */
function collectionsInSource(): Set<string> {
  const files = ['src', 'workers', 'realtime', 'rest'].flatMap((folder) => filesUnder(path.join(projectRoot, folder), '.ts'));
  return new Set(files.flatMap((file) => [...readFileSync(file, 'utf8').matchAll(/collection(?:<[^>]+>)?\('([a-z0-9_]+)'\)/g)].map((match) => match[1]!)));
}

describe('MongoDB shard keys (src/platform/shard-keys.ts)', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp();
  });
  after(async () => t?.close());

  it('every collection the service uses has a shard key or the reason it stays unsharded', async () => {
    const inDatabase = (await t.db.listCollections({}, { nameOnly: true }).toArray()).map((collection) => collection.name);
    const used = new Set([...collectionsInSource(), ...inDatabase]);
    assert.ok(used.size > 40, `found ${used.size} collections`);
    const undecided = [...used].filter((name) => !(name in SHARD_KEYS));
    assert.deepEqual(undecided, [], 'collections with no decision');
    const gone = Object.keys(SHARD_KEYS).filter((name) => !used.has(name));
    assert.deepEqual(gone, [], 'decisions for collections nothing uses');
  });

  it('every unique index of a collection to be sharded starts with the whole shard key, as MongoDB requires', async () => {
    let checked = 0;
    for (const [name, plan] of Object.entries(SHARD_KEYS)) {
      if (!('key' in plan)) continue;
      const fields = shardKeyFields(plan.key);
      // The indexes the repositories declared (their ensureIndexes ran when the app started).
      const indexes = await t.db.collection(name).listIndexes().toArray().catch(() => []);
      for (const index of indexes) {
        if (!index.unique || index.name === '_id_') continue;
        checked++;
        const prefix = Object.keys(index.key as object).slice(0, fields.length);
        assert.deepEqual(prefix, fields, `${name}: the unique index ${index.name} (${JSON.stringify(index.key)}) does not start with the shard key ${JSON.stringify(plan.key)}`);
      }
      // A hashed key is one field; a ranged one is what the collection's reads walk.
      assert.ok(fields.length > 0 && Object.values(plan.key).filter((kind) => kind === 'hashed').length <= 1, `${name}: at most one hashed field`);
    }
    assert.ok(checked >= 1, 'no unique index was checked (messages keeps one: {roomId, clientKey})');
  });

  it('messages stored before every message had a client key get their own at start, and the old index goes', async () => {
    const messages = t.db.collection('messages');
    // As an earlier version stored them: no client key, and the index unique over the key alone.
    await messages.dropIndex('client_message_once_in_room');
    await messages.createIndex({ clientKey: 1 }, { name: 'client_message_once', unique: true, sparse: true });
    const old = [{ _id: 'aaaaaaaaaaaaaaaaaaaaaaa1', roomId: 'old-room' }, { _id: 'aaaaaaaaaaaaaaaaaaaaaaa2', roomId: 'old-room' }];
    await messages.insertMany(old.map((doc) => ({ ...doc, userId: 'someone', message: 'before', parentId: null })) as never[]);
    await t.ctx.repos.messages.ensureIndexes();
    const keys = (await messages.find({ roomId: 'old-room' }).toArray()).map((doc) => doc.clientKey as string);
    assert.deepEqual(keys.sort(), ['old-room:id:aaaaaaaaaaaaaaaaaaaaaaa1', 'old-room:id:aaaaaaaaaaaaaaaaaaaaaaa2']);
    const indexes = await messages.listIndexes().toArray();
    assert.ok(indexes.some((index) => index.name === 'client_message_once_in_room' && index.unique));
    assert.ok(!indexes.some((index) => index.name === 'client_message_once'), 'the index unique over the key alone is gone');
  });

  it('devices stored before the per-user device lists are listed under their users at start', async () => {
    const devices = t.db.collection('devices');
    // As an earlier version stored them: devices with no list, and no mark saying they were listed.
    await t.db.collection('user_devices').deleteOne({ _id: '~listed' as never });
    const at = new Date();
    const device = (id: string, userId: string, revokedAt: Date | null) => ({ _id: id, userId, name: 'old', platform: 'IOS', createdAt: at, lastSeenAt: at, revokedAt, refreshTokenHash: id, refreshExpiresAt: at, spentRefreshHashes: [], pushToken: { token: `token-${id}`, provider: 'APNS', updatedAt: at }, voipPushToken: null });
    // More than a page of them (1,000), over a few users.
    const old = Array.from({ length: 1_203 }, (_, i) => device(`old-device-${String(i).padStart(4, '0')}`, `old-user-${i % 3}`, i === 7 ? at : null));
    await devices.insertMany(old as never[]);
    await t.ctx.repos.devices.ensureIndexes();
    for (const userId of ['old-user-0', 'old-user-1', 'old-user-2']) {
      const listed = (await t.db.collection('user_devices').findOne({ _id: userId as never }))?.deviceIds as string[];
      const active = old.filter((d) => d.userId === userId && d.revokedAt === null).map((d) => d._id);
      assert.deepEqual([...listed].sort(), active.sort(), `${userId}: every active device listed, the revoked one not`);
    }
    assert.equal((await t.ctx.repos.devices.pushableOf(['old-user-1'])).length, 401 - 1);
    assert.ok(await t.db.collection('user_devices').findOne({ _id: '~listed' as never }), 'marked as done: the next start does not list them again');
  });
});
