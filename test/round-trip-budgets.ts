/**
 * The round trips each hot path may make: MongoDB commands and Redis round trips (a MULTI … EXEC block
 * is one), counted per operation by test/integration/round-trips.test.ts (the driver's command
 * monitoring, every ioredis client of the process). A change that adds a round trip to one of these
 * paths changes this table in the same commit, so the cost is seen in review. `why` names the trips.
 */
export interface Budget {
  /** On the request path: until the answer. */
  mongo: number;
  redis: number;
  why: string;
  /** Set going by the operation and sent after its answer, not awaited (none when absent). */
  afterAnswer?: { mongo: number; redis: number; why: string };
}

export const ROUND_TRIP_BUDGETS = {
  'message post': {
    mongo: 2,
    redis: 1,
    why: 'mongo: the timeline number with the newest message (one findAndModify), then the insert (room and membership cached; under load both are shared with other posts, the number with posts to the same room: group commit) | redis: the broadcast (under load it goes out with other posts\' in one write). The room\'s push reach is cached (the last job learned it; a change clears it in every process), and nobody here has a push token: no job. A device of another member with a token adds its hubs (one round trip; their heartbeats read about once a second per process) and, when it is offline, the push job; a reach not learned yet (a change since the last job) adds its read and the job',
    afterAnswer: { mongo: 1, redis: 0, why: 'mongo: the author\'s read mark, written with the other authors\' marks of the next 200 ms (a stream of posts: a few writes a second; meanwhile the room\'s recent authors count as having read up to their own posts)' },
  },
  'message post with clientMessageId': {
    mongo: 2,
    redis: 1,
    why: 'as a post: the unique index answers a resend, no find first',
    afterAnswer: { mongo: 1, redis: 0, why: 'as a post' },
  },
  'message post with clientMessageId and Idempotency-Key (a phone)': {
    mongo: 2,
    redis: 3,
    why: 'as a post | redis: and the key\'s claim and its answer',
    afterAnswer: { mongo: 1, redis: 0, why: 'as a post' },
  },
  'message push job': {
    mongo: 14,
    redis: 6,
    why: 'in the worker, for a post to a room of two whose other member is offline with a push token: mongo: the message, its room, the members pushed to, their devices (their lists, then the devices), who of them blocks the author, the author\'s name, for the badge the member\'s rooms, those rooms and the memberships (the level of each: ALL counts unread messages, MENTIONS unread mentions), their activity and read marks, the recipients (do-not-disturb and quiet hours), and the local provider\'s record of the push (a real provider sends it over HTTP instead) | redis: the reach\'s version, the reach kept (the same as before: no clearing published to the other processes), the device\'s hubs (none: no heartbeat to read), the delivered log (its life set, and who it reached, sent together), the push marked delivered. A post nobody could be pushed starts no job at all',
  },
  comment: { mongo: 2, redis: 2, why: 'mongo: the parent, the insert (room and membership cached) | redis: the broadcast, the push job' },
  'read a page of messages': { mongo: 1, redis: 0, why: 'mongo: the page (room and membership cached)' },
  'message reply': {
    mongo: 3,
    redis: 1,
    why: 'as a post, and the message replied to (its excerpt)',
    afterAnswer: { mongo: 2, redis: 0, why: 'as a post, and the reply noted in the room\'s record of messages that address members (the replied-to author\'s unread mentions): only messages that mention or reply write it' },
  },
  'message edit': {
    mongo: 5,
    redis: 1,
    why: 'mongo: the message (room and membership cached), the new text (findAndModify, answering the text before), the earlier version kept, the replies\' excerpts, the chat list\'s preview | redis: the broadcast (taken by Redis before the answer, so the author\'s next change cannot overtake it)',
  },
  'message reaction': {
    mongo: 3,
    redis: 4,
    why: 'mongo: the message, its room (as a reader\'s check reads it), the reaction (one conditional findAndModify: the limit of 3 holds under races) | redis: the counts broadcast; the author\'s device event (the inbox append and the read of the hubs holding the device, in one write to one server; no hub holds it here, so none is poked), and its push job (offline here)',
  },
  'message reaction taken back': {
    mongo: 3,
    redis: 1,
    why: 'mongo: the message, its room (as a reader\'s check reads it), the reaction pulled (findAndModify) | redis: the counts broadcast (taken before the answer, as an edit\'s)',
  },
  'message versions': { mongo: 3, redis: 0, why: 'mongo: the message, its room (as a reader\'s check reads it), its earlier versions' },
  'message hidden for oneself': { mongo: 3, redis: 0, why: 'mongo: the message, its room (as a reader\'s check reads it), the caller added to who hid it' },
  'mark a room read (read receipts)': {
    mongo: 6,
    redis: 1,
    why: 'mongo: the membership, the timeline\'s count and newest message, the mark; for the receipt: the room (is it small enough), its members and their read-receipt settings | redis: room.read to the members who keep receipts (taken before the answer, as an edit\'s)',
  },
  'message readers': { mongo: 4, redis: 0, why: 'mongo: the message, its room (the reader\'s check, which also tells whether it keeps receipts), the read marks that reached it, the readers\' and the author\'s settings' },
  'message delete': {
    mongo: 11,
    redis: 2,
    why: 'mongo: the message, its room (as a reader\'s check reads it), whether a deletion of it was left unfinished, the deletion begun (a row the minute clean-up finishes from if the process dies), the tombstone (findAndModify), its attachments (none here, so no file and no removal), its earlier versions removed, the replies\' excerpts, the chat list\'s preview, its number left out of unread counts, the deletion\'s row removed | redis: the broadcast and the replacement push\'s job (a message of the last day), in one write',
  },
  'chat-status page': { mongo: 6, redis: 0, why: 'mongo: the rooms index, activity (once where all the rooms fit on the page, else for the order and for the page), rooms, memberships, read marks, calls' },
  'sign-in: code request': { mongo: 2, redis: 4, why: 'mongo: the old code retired, the new one | redis: the number\'s, address\'s and hourly budgets' },
  'sign-in: login': { mongo: 11, redis: 3, why: 'mongo: the code (find, claim, retire), the user, the device (on its user\'s list, then stored), the account read again (a sign-in racing the account\'s deletion revokes its device), the user\'s devices (their list, then the devices: the sign-in announced to them), the user read, pending requests | redis: two attempt budgets, the new device announced to every process\'s cache of the user\'s devices' },
  'sign-in: refresh': { mongo: 1, redis: 0, why: 'mongo: the device\'s token rotated' },
  'socket connect': { mongo: 2, redis: 3, why: 'mongo: the device, the rooms index | redis: the inbox state, presence (one MULTI), the inbox read' },
  'device-event emit': { mongo: 0, redis: 4, why: 'redis: the inbox append and the read of the hubs holding the device (one write to one server), the poke of the one hub holding it (its answer says the device is online: no push), and that hub (in this process here) reading the event for the connected socket (counted until the socket has it)' },
  transfer: {
    mongo: 5,
    redis: 4,
    why: 'mongo: the journal (the requestId used before?), the ledger group\'s four steps (entry, debit, credit, APPLIED: the money has moved, in both histories); the wallets\' facts (they never change), the device\'s biometric key and the recipient\'s devices cached | redis: the nonce, the recipient\'s device event (inbox append and the hubs holding the device, one write; none here), its push job',
    afterAnswer: { mongo: 2, redis: 0, why: 'mongo: the marks cleared, DONE (under load shared with other entries\')' },
  },
  'transfer, 8 items in one request': {
    mongo: 5,
    redis: 32,
    why: 'mongo: as one transfer: the eight entries go to the ledger as one group (four steps for all) | redis: a nonce per item, then per item the device event (inbox append and the hubs holding the device) and its push job',
    afterAnswer: { mongo: 2, redis: 0, why: 'as one transfer' },
  },
  'withdrawal request': { mongo: 11, redis: 4, why: 'mongo: the request (twice: the requestId, the day\'s total), the account, limits, the insert, the ledger entry\'s steps (the device\'s key, the owner\'s devices and the system account cached) | redis: the nonce, the job, the broadcast' },
  swap: { mongo: 18, redis: 1, why: 'mongo: the quote (read, then taken), the wallets, the swap, two ledger entries\' steps one after the other (the second only once the first is paid), the swap\'s end (the device\'s key and the system accounts cached) | redis: the nonce' },
  invocation: { mongo: 5, redis: 2, why: 'mongo: the app, the install, the identity, the manifest, the activity row | redis: the breaker\'s admission and settling' },
  'webhook delivery': { mongo: 2, redis: 3, why: 'mongo: the activity row, the delivery\'s end (the first attempt is held when the delivery is recorded and its job carries the body, sealed: nothing is read; under load the row and the end are shared with other deliveries: group commit) | redis: the app (cached), admission, settling' },
  'key-share upload': { mongo: 6, redis: 1, why: 'mongo: the room, memberships, identities, the version, its insert | redis: the key-call budget' },
  'attachment upload': {
    mongo: 4,
    redis: 1,
    why: 'a file that needs no processing: mongo: the caller\'s files in processing (before the files are read), the message\'s two, the attachment | redis: the broadcast (the room\'s push reach cached; nobody to push: no job). An image or video adds the processing slots taken and given back (redis 2) and the count again under them (mongo 1): the limit holds under concurrency',
    afterAnswer: { mongo: 1, redis: 0, why: 'mongo: the author\'s read mark, as a post' },
  },
} satisfies Record<string, Budget>;

export type HotPath = keyof typeof ROUND_TRIP_BUDGETS;
