import type { BlockReads } from '../contacts/index.js';
import type { DevicePushTokens } from '../devices/index.js';
import type { ActivityReads, MessageReads } from '../messages/index.js';
import { unreadCount, unreadMentions } from '../messages/index.js';
import type { PresenceStore } from '../presence/index.js';
import { addresses, levelNow, pushedAt, type Addressing } from '../rooms/index.js';
import type { MembershipReads, RoomDoc, RoomReads } from '../rooms/index.js';
import type { MessagePushJob } from '../platform/queues.js';
import type { RedisClient } from '../platform/redis.js';
import { quietNow, type UserReads } from '../users/index.js';
import type { PushMessage, PushProvider, PushTarget } from './push.js';
import { GroupWriter } from '../platform/group-writer.js';
import { REACH_MAX_DEVICES, type PushReachStore } from './push-reach.js';
import { limiter } from '../platform/limiter.js';

type MessageDoc = NonNullable<Awaited<ReturnType<MessageReads['findById']>>>;
type PushableDevice = Awaited<ReturnType<DevicePushTokens['pushableOf']>>[number];

/** The devices a message's push (or its replacement's) reached. */
export interface DeliveredLog {
  /** Those of `deviceIds` already reached; the log kept a day from now (a job is not run again later than that). */
  among(messageId: string, replacement: boolean, deviceIds: string[]): Promise<Set<string>>;
  add(messageId: string, replacement: boolean, deviceId: string): Promise<void>;
}

/**
 * The log in Redis: one hash per message and kind (one key: one slot on a cluster). Marks added while
 * one is being written go together (group commit): one HSET per message for every push that came back
 * meanwhile, instead of one per push (a crash in that round trip resends those pushes once, as a crash
 * between a push and its own mark did).
 */
export function redisDeliveredLog(redis: RedisClient, key: (messageId: string, replacement: boolean) => string): DeliveredLog {
  const marks = new GroupWriter<{ name: string; deviceId: string }, void>(async (group) => {
    const byKey = Map.groupBy(group, ({ item }) => item.name);
    await Promise.all([...byKey].map(([name, waiters]) => redis.hset(name, Object.fromEntries(waiters.map(({ item }) => [item.deviceId, '1'])))));
    for (const waiter of group) waiter.resolve();
  }, IN_FLIGHT);
  return {
    async among(messageId, replacement, deviceIds) {
      if (deviceIds.length === 0) return new Set();
      const name = key(messageId, replacement);
      // The hash made (with a field of its own) and its life set before any push is added to it.
      const [found] = await Promise.all([redis.hmget(name, ...deviceIds), redis.multi().hset(name, '_', '1').expire(name, 86_400).exec()]);
      return new Set(deviceIds.filter((_, i) => found[i] !== null));
    },
    add(messageId, replacement, deviceId) {
      return marks.add({ name: key(messageId, replacement), deviceId });
    },
  };
}

/** How much of a message a push shows. */
export const PUSH_PREVIEW_LENGTH = 100;
/** Members handled per batch: one read of their devices, one of their rooms, one of their read marks. */
const BATCH = 500;
/** Pushes in flight to the providers at once, from this process (shared by the parts it runs together). */
const IN_FLIGHT = 256;

export interface MessagePushOutcome {
  /** Members the message is for (enabled, unmuted, not the author, not blocking the author). */
  recipients: number;
  /** Their devices with a push token. */
  devices: number;
  /** Devices left out because their socket got the message live. */
  online: number;
  sent: number;
  /** Tokens the push service refused for good: removed from their devices. */
  invalid: number;
  failed: number;
  /** Devices an earlier run of the same job had reached already: not pushed again. */
  alreadySent: number;
}

/** The text a push shows: control characters and runs of white space folded, at most 100 characters. */
export function pushPreview(text: string): string {
  // eslint-disable-next-line no-control-regex
  const clean = text.replace(/[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u2028-\u202e\u2066-\u2069]+/g, ' ').replace(/\s+/g, ' ').trim();
  return clean.length <= PUSH_PREVIEW_LENGTH ? clean : `${clean.slice(0, PUSH_PREVIEW_LENGTH - 1)}…`;
}

/**
 * Pushes a new message to the room's members who did not get it live (issue 23): from one worker job
 * per post, in batches of members. Each device of each enabled, unmuted member that has a push token
 * and no live socket gets one alert: the room and author, a cleaned preview (none at all in an
 * end-to-end encrypted room), the member's unread total as the badge, and the room as the collapse
 * key, so a busy room replaces its notification instead of stacking them. A comment goes to the
 * author of the message it answers only. Members who blocked the author get nothing.
 */
export class MessagePushService {
  private readonly inFlight = limiter(IN_FLIGHT);

  constructor(
    private readonly deps: {
      messages: Pick<MessageReads, 'findById'>;
      rooms: Pick<RoomReads, 'findById' | 'findManyByIds'>;
      members: Pick<MembershipReads, 'pushRecipients' | 'roomIdsOfUsers' | 'membershipsOf' | 'membershipsByIds'>;
      activity: Pick<ActivityReads, 'activityOf' | 'readMarksOf'>;
      blocks: Pick<BlockReads, 'blockersAmong'>;
      devices: Pick<DevicePushTokens, 'pushableOf' | 'setPushToken'>;
      presence: Pick<PresenceStore, 'onlineAmong'>;
      users: Pick<UserReads, 'findById' | 'findManyByIds'>;
      providerFor: (service: PushTarget['service']) => PushProvider | null;
      /** Queues the parts of a large room's fan-out (message-push jobs with `part`). */
      enqueueParts: (jobs: MessagePushJob[]) => Promise<void>;
      /** Members per part of a large room's fan-out (PUSH_PART_MEMBERS). */
      partMembers: number;
      /** Which devices a message's push already reached (a job run again after a failure sends to the others only). */
      delivered: DeliveredLog;
      /** Who the room's posts could be pushed to, learned here for the posts to come (a post with nobody to push starts no job). */
      reach: Pick<PushReachStore, 'version' | 'store'>;
      /** Now, for mutes with an end. */
      clock: () => Date;
    },
  ) {}

  /**
   * A post's job: its recipients, pushed here when they are few, else split into parts of
   * `partMembers` queued as jobs of their own (so every worker process pushes some); a part's
   * job pushes to its members.
   */
  async fanOut(job: MessagePushJob): Promise<MessagePushOutcome & { parts: number }> {
    const outcome: MessagePushOutcome = { recipients: 0, devices: 0, online: 0, sent: 0, invalid: 0, failed: 0, alreadySent: 0 };
    const message = await this.deps.messages.findById(job.messageId);
    const room = message ? await this.deps.rooms.findById(message.roomId) : null;
    if (!message || !room) return { ...outcome, parts: 0 };
    const replacement = Boolean(job.replacement);
    if (job.mentioned) return { ...(await this.pushTo(message, room, await this.newlyMentioned(message, room, job.mentioned), false, undefined, true)), parts: 0 };
    if (job.part) return { ...(await this.pushTo(message, room, job.part.memberIds, replacement)), parts: 0 };
    const { recipients, devices } = await this.recipientsOf(message, room);
    const size = this.deps.partMembers;
    if (recipients.length > size) {
      const parts: MessagePushJob[] = [];
      for (let i = 0; i < recipients.length; i += size) {
        parts.push({ messageId: job.messageId, ...(replacement ? { replacement: true } : {}), part: { index: parts.length, memberIds: recipients.slice(i, i + size) } });
      }
      await this.deps.enqueueParts(parts);
      return { ...outcome, recipients: recipients.length, parts: parts.length };
    }
    return { ...(await this.pushTo(message, room, recipients, replacement, devices)), parts: 0 };
  }

  /**
   * Members an edit newly mentioned who may be pushed it: enabled members for whom the room is not
   * NONE now, who do not block the author.
   */
  private async newlyMentioned(message: MessageDoc, room: RoomDoc, userIds: string[]): Promise<string[]> {
    const now = this.deps.clock();
    const members = await this.deps.members.membershipsByIds(userIds.map((userId) => `${room._id}:${userId}`));
    const reachable = [...members.values()].filter((member) => member.active && member.enabled && member.userId !== message.userId && levelNow(member, room, now) !== 'NONE').map((member) => member.userId);
    const blocking = new Set(await this.deps.blocks.blockersAmong(message.userId, reachable));
    return reachable.filter((userId) => !blocking.has(userId));
  }

  /**
   * Pushes `message` to the offline devices of `recipients` it has not reached yet (a job run again
   * after a failure). `known`: the recipients' pushable devices, read already (a small room's).
   * `mention`: an edit's mention, pushed once under a delivery of its own (`<messageId>:mention`).
   */
  private async pushTo(message: MessageDoc, room: RoomDoc, recipients: string[], replacement: boolean, known?: PushableDevice[], mention = false): Promise<MessagePushOutcome> {
    const outcome: MessagePushOutcome = { recipients: recipients.length, devices: 0, online: 0, sent: 0, invalid: 0, failed: 0, alreadySent: 0 };
    const messageId = message._id;
    const deliveryId = mention ? `${messageId}:mention` : messageId;
    const deleted = Boolean(message.deletedAt);
    // What the push shows, read once a device needs one.
    let shown: { base: { title: string; text: string | null }; authorName: string } | null = null;
    const show = async () => {
      if (shown) return shown;
      const author = message.appId ? null : await this.deps.users.findById(message.userId);
      const authorName = message.appId ? 'App' : (author?.displayName ?? 'Someone');
      const base = {
        title: room.type === 'DIRECT' || !room.name ? authorName : room.name,
        // A deleted message's push replaces the one shown for it (same collapse key), saying so.
        text: deleted ? 'This message was deleted' : message.encrypted ? null : pushPreview(message.card ? 'Sent a card' : message.message || (message.attachmentIds.length > 0 ? 'Sent an attachment' : '')),
      };
      return (shown = { base, authorName });
    };
    // The next batch is read while the pushes of the ones before are on their way.
    const limit = this.inFlight;
    const sends: Promise<void>[] = [];
    for (let i = 0; i < recipients.length; i += BATCH) {
      const batch = recipients.slice(i, i + BATCH);
      const devices = known ? known.filter((device) => batch.includes(device.userId)) : await this.deps.devices.pushableOf(batch);
      const online = await this.deps.presence.onlineAmong(devices.map((device) => device._id));
      const unsent = devices.filter((device) => !online.has(device._id) && device.pushToken);
      const reached = await this.deps.delivered.among(deliveryId, replacement, unsent.map((device) => device._id));
      const offline = unsent.filter((device) => !reached.has(device._id));
      outcome.devices += devices.length;
      outcome.online += online.size;
      outcome.alreadySent += reached.size;
      if (offline.length === 0) continue;
      const { base, authorName } = await show();
      const people = [...new Set(offline.map((device) => device.userId))];
      const [badges, quiet] = await Promise.all([this.unreadTotals(people), this.quietAmong(people)]);
      const addressing = addressingOf(message);
      const pushes = offline.map((device) => {
        const push = this.render(room._id, messageId, message.encrypted && !deleted, base, room.type === 'DIRECT' ? null : authorName, badges.get(device.userId) ?? 0, !deleted && (mention || addresses(addressing, device.userId)));
        return { device, message: quiet.has(device.userId) ? { ...push, quiet: true } : push };
      });
      for (const { device, message: push } of pushes) {
        sends.push(
          limit(async () => {
            // `!`: only devices with a token were kept above.
            const token = device.pushToken!;
            const provider = this.deps.providerFor(token.provider);
            if (!provider) return;
            const result = await provider.send({ token: token.token, service: token.provider }, push).catch((error: unknown) => ({ ok: false as const, tokenInvalid: false, reason: String(error) }));
            if (result.ok) {
              outcome.sent++;
              await this.deps.delivered.add(deliveryId, replacement, device._id);
            } else if (result.tokenInvalid) {
              outcome.invalid++;
              await this.deps.devices.setPushToken(device._id, null);
            } else outcome.failed++;
          }),
        );
      }
    }
    await Promise.all(sends);
    return outcome;
  }

  /**
   * Enabled, unmuted members other than the author who did not block the author; for a comment, the
   * parent's author alone. A timeline post's members are also the room's reach, kept for the posts
   * to come; a small room's devices are read here once, for both (`devices`, every member's).
   */
  private async recipientsOf(message: MessageDoc, room: RoomDoc): Promise<{ recipients: string[]; devices?: PushableDevice[] }> {
    const { roomId, userId: authorId, parentId } = message;
    const now = this.deps.clock();
    let candidates: string[];
    let devices: PushableDevice[] | undefined;
    if (parentId) {
      // A comment is pushed to the parent's author, as a reply to them: unless the room is NONE for them now.
      const parent = await this.deps.messages.findById(parentId);
      const member = parent ? (await this.deps.members.membershipsOf(parent.userId, [roomId])).get(roomId) : undefined;
      candidates = parent && member?.active && member.enabled && levelNow(member, room, now) !== 'NONE' ? [parent.userId] : [];
    } else {
      // The version before the database: a change meanwhile keeps this job from storing what it read.
      const version = await this.deps.reach.version(roomId);
      const members = await this.deps.members.pushRecipients(roomId);
      // The reach is every member who could be pushed some post (a mute with an end ends by itself);
      // this post goes to those whose level now takes it (notifications.ts).
      const everyone = members.map((member) => member.userId);
      if (everyone.length <= REACH_MAX_DEVICES) devices = await this.deps.devices.pushableOf(everyone);
      await this.deps.reach.store(roomId, version, devices ? devices.map((device) => [device._id, device.userId]) : null);
      const addressing = addressingOf(message);
      candidates = members.filter((member) => pushedAt(levelNow(member, room, now), addressing, member.userId)).map((member) => member.userId);
    }
    candidates = candidates.filter((userId) => userId !== authorId);
    const blocking = new Set<string>();
    for (let i = 0; i < candidates.length; i += BATCH) for (const id of await this.deps.blocks.blockersAmong(authorId, candidates.slice(i, i + BATCH))) blocking.add(id);
    const recipients = candidates.filter((userId) => !blocking.has(userId));
    return { recipients, devices };
  }

  /**
   * Each user's badge over all their rooms: the unread messages of the rooms that are ALL for them,
   * the unread mentions of those that are MENTIONS, nothing of those that are NONE now (five reads for
   * the batch: their rooms, the rooms, the memberships, the activity, the read marks).
   */
  private async unreadTotals(userIds: string[]): Promise<Map<string, number>> {
    if (userIds.length === 0) return new Map();
    const roomsOf = await this.deps.members.roomIdsOfUsers(userIds);
    const roomIds = [...new Set([...roomsOf.values()].flat())];
    const keys = [...roomsOf].flatMap(([userId, rooms]) => rooms.map((roomId) => `${roomId}:${userId}`));
    const [activity, marks, rooms, memberships] = await Promise.all([
      this.deps.activity.activityOf(roomIds, { full: false }),
      this.deps.activity.readMarksOf(keys),
      this.deps.rooms.findManyByIds(roomIds),
      this.deps.members.membershipsByIds(keys),
    ]);
    const roomById = new Map(rooms.map((room) => [room._id, room]));
    const now = this.deps.clock();
    const unreadIn = (userId: string, roomId: string): number => {
      const key = `${roomId}:${userId}`;
      const room = roomById.get(roomId);
      const member = memberships.get(key);
      const level = room && member ? levelNow(member, room, now) : 'ALL';
      if (level === 'NONE') return 0;
      const counted = level === 'MENTIONS' ? unreadMentions : unreadCount;
      return counted(activity.get(roomId), marks.get(key), userId);
    };
    return new Map([...roomsOf].map(([userId, inRooms]) => [userId, inRooms.reduce((sum, roomId) => sum + unreadIn(userId, roomId), 0)]));
  }

  /** Which of the users are in do-not-disturb or quiet hours now (one read). */
  private async quietAmong(userIds: string[]): Promise<Set<string>> {
    const now = this.deps.clock();
    return new Set((await this.deps.users.findManyByIds(userIds)).filter((user) => quietNow(user.notifications, now)).map((user) => user._id));
  }

  /** `mentioned`: the message mentions the recipient, the room, or replies to them (`category: MENTION`, and the alert says so). */
  private render(roomId: string, messageId: string, encrypted: boolean, base: { title: string; text: string | null }, authorName: string | null, badge: number, mentioned = false): PushMessage {
    const data: Record<string, string> = { event: 'message.new', roomId, messageId, ...(mentioned ? { category: 'MENTION' } : {}) };
    // End-to-end encrypted: ids only, and `mutable-content` lets the phone decrypt and show it itself.
    if (encrypted) return { kind: 'alert', alert: { title: mentioned ? 'You were mentioned' : 'New message', body: 'You have a new message' }, data, ttlSeconds: 86_400, collapseId: roomId, badge, mutableContent: true };
    const said = mentioned && authorName ? `${authorName} mentioned you` : authorName;
    const body = said ? `${said}: ${base.text ?? ''}` : (base.text ?? '');
    return { kind: 'alert', alert: { title: base.title, body }, data: { ...data, roomName: base.title }, ttlSeconds: 86_400, collapseId: roomId, badge };
  }
}

/** Whom a message addresses: its mentions, the whole room, the author of the message it replies to. */
function addressingOf(message: MessageDoc): Addressing {
  return { mentions: message.mentions, mentionsRoom: message.mentionsRoom === true, repliesTo: message.replyTo?.userId };
}
