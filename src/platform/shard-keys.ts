/**
 * The MongoDB shard key of every collection, or why it stays unsharded (docs/operators/scaling.md,
 * "MongoDB shards"). Chosen from the queries of the hot paths: a collection is sharded by what those
 * queries name (a room's timeline by its room, a user's things by the user), hashed where reads name
 * one or a list of ids (spread evenly, each read still going to the shards that hold them), ranged
 * where reads name an owner whose documents may outgrow one chunk (a room's messages, its members).
 *
 * MongoDB refuses to shard a collection with a unique index that does not start with the shard key
 * (and enforces `_id`'s uniqueness per shard only: ours are ObjectIds, UUIDs or names made of the
 * owner's ids, unique by construction). test/integration/shard-keys.test.ts checks every unique index the
 * repositories declare against this table, and that every collection is in it.
 */
export type ShardKey = Record<string, 1 | 'hashed'>;

export type ShardPlan = { key: ShardKey; why: string } | { unsharded: string };

export const SHARD_KEYS: Record<string, ShardPlan> = {
  // Messages and the rooms' timelines: by room.
  messages: {
    key: { roomId: 1, clientKey: 1 },
    why: 'a room\'s timeline (pages before or after a message, the newest) goes to the shards holding that room\'s chunks, never to all; the client key (unique with the room: a resend finds the first post) splits a large room\'s history into chunks. Reads by message id alone (edit, delete, react, readers) carry no room: they go to every shard',
  },
  message_edits: { key: { messageId: 'hashed' }, why: 'a message\'s earlier versions are read by its id' },
  message_removals: { unsharded: 'deletions for everyone under way: a row lives from the tombstone to the end of its follow-ups, milliseconds' },
  room_activity: { key: { _id: 'hashed' }, why: 'one document per room (its id), read by lists of room ids for the chat list and badges' },
  room_reads: { key: { _id: 'hashed' }, why: 'one read mark per member and room (id room:user), read by lists of those ids for unread counts' },
  room_members: {
    key: { roomId: 1, userId: 1 },
    why: 'a room\'s members (push recipients, member lists) by room; membership writes name the room and user; a membership read by its id room:user (the posting path, behind a 5-second cache) asks every shard',
  },
  attachments: { key: { _id: 'hashed' }, why: 'read by id (download, claim); a room\'s attachment list is rare and goes to every shard' },

  // Per user: hashed user id.
  user_rooms: { key: { _id: 'hashed' }, why: 'one document per user (its id): the rooms index read at every socket connection and chat list' },
  user_devices: { key: { _id: 'hashed' }, why: 'one document per user (its id): the ids of their active devices, read by lists of user ids for a push\'s recipients and by one for a device event to a user' },
  devices: {
    key: { _id: 'hashed' },
    why: 'read by id: every request\'s token check, and a user\'s devices through their user_devices list (a push\'s 500 recipients: their device ids, each going to the shard that holds it). Reads by user alone (account export and deletion) go to every shard, off the hot path',
  },
  login_codes: { key: { phone: 'hashed' }, why: 'codes are looked up by phone number' },
  account_exports: { key: { userId: 'hashed' }, why: 'a user\'s exports' },
  e2ee_identities: { key: { userId: 'hashed' }, why: 'a user\'s device identity keys' },
  e2ee_backups: { key: { _id: 'hashed' }, why: 'one key backup per user (its id)' },
  calls: { unsharded: 'one-to-one calls in progress and their recent history: small, and read by either party (caller or callee), so no one key targets both' },
  device_calls: { unsharded: 'a device\'s ringing call: one small document per device with a call' },

  // Apps: by app.
  app_activity: { key: { appId: 'hashed' }, why: 'an app\'s activity log (the console\'s list and CSV) by app' },
  app_invocations: { key: { _id: 'hashed' }, why: 'an invocation is read by its id (the app\'s reply names it)' },
  app_deliveries: { key: { _id: 'hashed' }, why: 'a webhook delivery is read by its id (retries, replay); the age sweep goes to every shard, off the hot path' },

  // The money: one replica set.
  ledger_accounts: { unsharded: 'a deposit address is unique across accounts, which a shard key by user could not keep; the reconciler reads every unfinished journal entry and the books check sums every account, reads that would go to every shard. Its volume (transfers) is far below the messages\': it stays on one replica set, and when it outgrows that it moves whole to a cluster of its own' },
  ledger_journal: { unsharded: 'written in the ledger\'s transactions (see ledger_accounts)' },
  ledger_counters: { unsharded: 'the ledger\'s sequence numbers (see ledger_accounts)' },
  ledger_books_checks: { unsharded: 'the reconciler\'s reports (see ledger_accounts)' },
  wallet_withdrawals: { unsharded: 'a withdrawal\'s request key is unique across users, and the sweep reads by status: small beside messages' },
  wallet_swaps: { unsharded: 'one swap per quote (unique): small' },
  wallet_swap_quotes: { unsharded: 'short-lived quotes: small' },
  wallet_payment_requests: { unsharded: 'read by requester and by recipient (no one key targets both): small' },
  wallet_limit_requests: { unsharded: 'one open request per account (unique), reviewed by administrators: small' },
  app_payments: { unsharded: 'a payment\'s reference is unique across apps, and moves money with the ledger' },
  app_money_requests: { unsharded: 'payments apps ask for: small, with the ledger' },
  chain_cursors: { unsharded: 'one cursor per chain scanner' },

  // Small, or unique across the whole collection.
  users: { unsharded: 'phone numbers and e-mail addresses are unique across users, which a shard key by user id could not keep; a million users are about a gigabyte' },
  rooms: { unsharded: 'a room\'s unique key (direct chats: the pair) is unique across rooms; public rooms are searched by name words across all of them; ten million rooms fit one replica set' },
  room_links: { unsharded: 'invitation links, looked up by their token: small' },
  room_invitations: { unsharded: 'read by invitee and by room (no one key targets both): small' },
  room_apps: { unsharded: 'apps installed in rooms: small' },
  room_calls: { unsharded: 'room calls in progress and their recent history: small' },
  room_call_locks: { unsharded: 'one short-lived lock per room call' },
  connections: { unsharded: 'one document per pair of users, found by either (a multikey array, which cannot be a shard key)' },
  connection_requests: { unsharded: 'one pending request per pair (unique across users): small' },
  blocks: { unsharded: 'read by blocker and checked by the blocked user\'s posts (no one key targets both): small' },
  reports: { unsharded: 'one open report per reporter and target (unique), the moderators\' queue: small' },
  admin_audit: { unsharded: 'administrators\' actions: small' },
  account_deletions: { unsharded: 'accounts being erased: a handful at a time' },
  apps: { unsharded: 'apps are searched by name words across all of them: small' },
  app_manifests: { unsharded: 'each app\'s manifest versions: small' },
  app_credentials: { unsharded: 'each app\'s secrets and tokens: small' },
  app_identities: { unsharded: 'a member\'s identity per app is unique while active, across users and apps: small' },
  app_installs: { unsharded: 'a user\'s installed apps: small' },
  e2ee_key_versions: { unsharded: 'each encrypted room\'s key versions: small' },
  e2ee_rooms: { unsharded: 'one document per encrypted room: small' },
  e2ee_key_requests: { unsharded: 'one open key request per device and room (unique): small' },
  push_records: { unsharded: 'development and tests only (the local push provider)' },
};

/** The fields of a shard key, in order. */
export const shardKeyFields = (key: ShardKey): string[] => Object.keys(key);

/** Markers around the generated part of deploy/mongo-shard-init.js and of the scaling page's table (`npm run docs:tables`). */
export const SHARD_COMMANDS_MARKERS = { start: '// shard-commands:start (npm run docs:tables writes it)', end: '// shard-commands:end' } as const;
export const SHARD_TABLE_MARKERS = { start: '<!-- shard-key-table:start (npm run docs:tables writes it) -->', end: '<!-- shard-key-table:end -->' } as const;

/** The mongosh commands that shard each collection with a key (the supporting index first: a collection with data needs it). */
export function shardCommands(): string {
  return Object.entries(SHARD_KEYS)
    .flatMap(([name, plan]) => ('key' in plan ? [`shard('${name}', ${JSON.stringify(plan.key).replaceAll('"', "'").replaceAll(',', ', ').replaceAll(':', ': ')});`] : []))
    .join('\n');
}

/** The table of every collection: its shard key, or why it stays unsharded. */
export function shardKeyTableMarkdown(): string {
  const rows = Object.entries(SHARD_KEYS).map(([name, plan]) =>
    'key' in plan ? `| \`${name}\` | \`${JSON.stringify(plan.key).replaceAll('"', '')}\` | ${plan.why.replaceAll('|', '\\|')} |` : `| \`${name}\` | unsharded | ${plan.unsharded.replaceAll('|', '\\|')} |`,
  );
  return ['| collection | shard key | why |', '|---|---|---|', ...rows].join('\n');
}
