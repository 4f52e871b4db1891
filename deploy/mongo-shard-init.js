/* global db, sh, print, process -- mongosh's globals */
// The sharded MongoDB of docker-compose.mongo-sharded.yml, made once by `mongo-shard-init` through
// mongos (mongosh --file): the shards added, then every collection with a shard key sharded
// (src/platform/shard-keys.ts; docs/operators/scaling.md, "MongoDB shards"). Run again, it changes
// nothing. On an existing deployment run the `shard(...)` lines against mongos, with the database's
// name in DB: each creates the key's index first (a collection with data needs it), then shards.
const DB = process.env.MONGODB_DB || 'chat';

for (const shard of ['shard1rs/mongo-shard-1:27018', 'shard2rs/mongo-shard-2:27018']) {
  const id = shard.split('/')[0];
  if (!db.getSiblingDB('config').shards.findOne({ _id: id })) sh.addShard(shard);
}
sh.enableSharding(DB);

function shard(collection, key) {
  const namespace = `${DB}.${collection}`;
  if (db.getSiblingDB('config').collections.findOne({ _id: namespace, key: { $exists: true } })) return;
  db.getSiblingDB(DB).getCollection(collection).createIndex(key);
  sh.shardCollection(namespace, key);
  print(`sharded ${namespace} by ${JSON.stringify(key)}`);
}

// shard-commands:start (npm run docs:tables writes it)
shard('messages', {'roomId': 1, 'clientKey': 1});
shard('message_edits', {'messageId': 'hashed'});
shard('room_activity', {'_id': 'hashed'});
shard('room_reads', {'_id': 'hashed'});
shard('room_members', {'roomId': 1, 'userId': 1});
shard('attachments', {'_id': 'hashed'});
shard('user_rooms', {'_id': 'hashed'});
shard('user_devices', {'_id': 'hashed'});
shard('devices', {'_id': 'hashed'});
shard('login_codes', {'phone': 'hashed'});
shard('account_exports', {'userId': 'hashed'});
shard('e2ee_identities', {'userId': 'hashed'});
shard('e2ee_backups', {'_id': 'hashed'});
shard('app_activity', {'appId': 'hashed'});
shard('app_invocations', {'_id': 'hashed'});
shard('app_deliveries', {'_id': 'hashed'});
// shard-commands:end
