import { Queue } from 'bullmq';
import type { Db, MongoClient } from 'mongodb';
import type { Redis } from 'ioredis';
import { TokenService } from './auth/tokens.js';
import type { Config } from './platform/config.js';
import { connectMongo } from './platform/mongo.js';
import { GeoipLiteLocator, type GeoLocator } from './platform/geoip.js';
import { DeviceEvents, type PushRequest } from './platform/device-events.js';
import { DeviceInbox } from './inbox/inbox.js';
import { PresenceStore } from './presence/presence.store.js';
import { pushProviders } from './push/providers.js';
import { JOBS, QUEUES, queuePrefix } from './platform/queues.js';
import type { Logger } from './platform/logger.js';
import { connectRedis } from './platform/redis.js';
import { CacheBus } from './platform/cache/invalidation.js';
import { BlocksRepo } from './contacts/blocks.repo.js';
import { CallsRepo } from './calls/calls.repo.js';
import { RoomCallsRepo } from './calls/room-calls.repo.js';
import { ConnectionsRepo } from './contacts/connections.repo.js';
import { ConnectionRequestsRepo } from './contacts/connection-requests.repo.js';
import { AttachmentsRepo } from './attachments/attachments.repo.js';
import { DevicesRepo } from './devices/devices.repo.js';
import { MessagesRepo } from './messages/messages.repo.js';
import { RoomsRepo } from './rooms/rooms.repo.js';
import { LoginCodesRepo } from './auth/login-codes.repo.js';
import { RoomMembersRepo } from './rooms/room-members.repo.js';
import { UsersRepo } from './users/users.repo.js';
import { AuthService } from './auth/auth.service.js';
import { AttachmentsService } from './attachments/attachments.service.js';
import { BiometricService } from './devices/biometric.service.js';
import { BlocksService } from './contacts/blocks.service.js';
import { CallsService } from './calls/calls.service.js';
import { RoomCallsService } from './calls/room-calls.service.js';
import { SfuClient } from './sfu/sfu-client.js';
import { ContactsService } from './contacts/contacts.service.js';
import { DevicesService } from './devices/devices.service.js';
import { IceService } from './calls/ice.service.js';
import { MediaService } from './attachments/media.service.js';
import { MessagesService } from './messages/messages.service.js';
import { SummariesService, type SummaryJob } from './summaries/summaries.service.js';
import { ExtractiveSummarizer } from './summaries/extractive.summarizer.js';
import { OpenAiCompatibleSummarizer } from './summaries/openai.summarizer.js';
import { RoomsService } from './rooms/rooms.service.js';
import { MaintenanceService } from './maintenance/maintenance.service.js';
import { PresenceService } from './presence/presence.service.js';
import { PushService } from './push/push.service.js';
import { UsersService } from './users/users.service.js';
import { OutboxSmsProvider } from './platform/sms/outbox.provider.js';
import type { SmsProvider } from './platform/sms/sms.js';
import { TwilioSmsProvider } from './platform/sms/twilio.provider.js';
import { LocalDiskStorage } from './platform/storage/local.storage.js';
import { S3Storage } from './platform/storage/s3.storage.js';
import { PocketsphinxTranscriber, type Transcriber } from './speech/transcriber.js';
import type { BlobStorage } from './platform/storage/storage.js';
import type { EmailProvider } from './platform/email/email.js';
import { OutboxEmailProvider } from './platform/email/outbox.provider.js';
import { SendgridEmailProvider } from './platform/email/sendgrid.provider.js';

/** Everything a role needs, wired once per process: connections, repos and services. */
export interface AppContext {
  config: Config;
  logger: Logger;
  mongo: MongoClient;
  db: Db;
  redis: Redis;
  events: DeviceEvents;
  geo: GeoLocator;
  inbox: DeviceInbox;
  presence: PresenceStore;
  queues: { push: Queue<PushRequest>; calls: Queue<{ callId: string }>; media: Queue<{ attachmentId: string }>; summaries: Queue<SummaryJob> };
  storage: BlobStorage;
  transcriber: Transcriber;
  repos: {
    users: UsersRepo;
    devices: DevicesRepo;
    loginCodes: LoginCodesRepo;
    connections: ConnectionsRepo;
    roomMembers: RoomMembersRepo;
    blocks: BlocksRepo;
    calls: CallsRepo;
    roomCalls: RoomCallsRepo;
    connectionRequests: ConnectionRequestsRepo;
    rooms: RoomsRepo;
    messages: MessagesRepo;
    attachments: AttachmentsRepo;
  };
  services: { auth: AuthService; users: UsersService; devices: DevicesService; maintenance: MaintenanceService; push: PushService; presence: PresenceService; ice: IceService; calls: CallsService; roomCalls: RoomCallsService;
    contacts: ContactsService; blocks: BlocksService; biometric: BiometricService;
    rooms: RoomsService; messages: MessagesService; attachments: AttachmentsService; media: MediaService; summaries: SummariesService };
  close(): Promise<void>;
}

function smsProvider(config: Config): SmsProvider {
  if (config.SMS_PROVIDER === 'twilio') {
    // Presence is checked by the configuration schema.
    return new TwilioSmsProvider({
      accountSid: config.TWILIO_ACCOUNT_SID ?? '',
      authToken: config.TWILIO_AUTH_TOKEN ?? '',
      from: config.TWILIO_FROM ?? '',
      apiBase: config.TWILIO_API_BASE,
    });
  }
  return new OutboxSmsProvider(config.SMS_OUTBOX_FILE);
}

function emailProvider(config: Config): EmailProvider {
  if (config.EMAIL_PROVIDER === 'sendgrid') {
    return new SendgridEmailProvider({ apiKey: config.SENDGRID_API_KEY ?? '', from: config.EMAIL_FROM, apiBase: config.SENDGRID_API_BASE });
  }
  return new OutboxEmailProvider(config.EMAIL_OUTBOX_FILE);
}

export async function createContext(config: Config, logger: Logger): Promise<AppContext> {
  const { client: mongo, db } = await connectMongo(config.MONGODB_URL, config.MONGODB_DB);
  const redis = connectRedis(config.REDIS_URL);
  redis.on('error', (error) => logger.warn({ err: error }, 'redis connection error'));

  // Hot-path reads (the device check of every request, the room of every post) are cached for a
  // few seconds; writes clear them in every process through Redis.
  const cacheBus = new CacheBus(redis, config.REDIS_PREFIX);
  await cacheBus.start();
  const repos = {
    users: new UsersRepo(db),
    devices: new DevicesRepo(db, cacheBus),
    loginCodes: new LoginCodesRepo(db),
    connections: new ConnectionsRepo(db),
    roomMembers: new RoomMembersRepo(db, cacheBus),
    blocks: new BlocksRepo(db),
    calls: new CallsRepo(db),
    roomCalls: new RoomCallsRepo(db),
    connectionRequests: new ConnectionRequestsRepo(db),
    rooms: new RoomsRepo(db, cacheBus),
    messages: new MessagesRepo(db),
    attachments: new AttachmentsRepo(db),
  };
  await Promise.all(Object.values(repos).map((repo) => repo.ensureIndexes()));

  const inbox = new DeviceInbox(redis, config.REDIS_PREFIX, { maxEvents: config.INBOX_MAX_EVENTS, maxAgeSeconds: config.INBOX_MAX_AGE });
  const presence = new PresenceStore(redis, config.REDIS_PREFIX, config.PRESENCE_TTL * 1000);
  // BullMQ does not close a connection it was given: this one is quit in close() below.
  const queueConnection = redis.duplicate();
  const queue = <T>(name: string, attempts: number, backoff: { type: 'fixed' | 'exponential'; delay: number }) =>
    new Queue<T>(name, {
      connection: queueConnection,
      prefix: queuePrefix(config.REDIS_PREFIX),
      defaultJobOptions: { attempts, backoff, removeOnComplete: 1000, removeOnFail: 1000 },
    });
  const pushQueue = queue<PushRequest>(QUEUES.push, 5, { type: 'exponential', delay: 2_000 });
  const callsQueue = queue<{ callId: string }>(QUEUES.calls, 3, { type: 'fixed', delay: 1_000 });
  const mediaQueue = queue<{ attachmentId: string }>(QUEUES.media, 3, { type: 'exponential', delay: 2_000 });
  const summariesQueue = queue<SummaryJob>(QUEUES.summaries, 3, { type: 'exponential', delay: 2_000 });
  const storage: BlobStorage =
    config.STORAGE_PROVIDER === 's3'
      ? new S3Storage({
          endpoint: config.S3_ENDPOINT ?? '',
          region: config.S3_REGION,
          bucket: config.S3_BUCKET ?? '',
          accessKeyId: config.S3_ACCESS_KEY_ID ?? '',
          secretAccessKey: config.S3_SECRET_ACCESS_KEY ?? '',
          pathStyle: config.S3_PATH_STYLE,
        })
      : new LocalDiskStorage(config.STORAGE_DIR);
  const events = new DeviceEvents(
    redis,
    config.REDIS_PREFIX,
    inbox,
    presence,
    async (userId) => (await repos.devices.listActiveByUser(userId)).map((device) => device._id),
    // Job data holds ids only; the worker reads the event from the inbox. The job id makes it idempotent.
    async (request) => {
      await pushQueue.add(JOBS.push, request, { jobId: `${request.deviceId}-${request.seq}` });
    },
  );
  const providers = pushProviders(config, db);
  const tokens = new TokenService(config.JWT_SECRET, config.ACCESS_TOKEN_TTL, config.TWO_FACTOR_TOKEN_TTL);
  const sms = smsProvider(config);
  const geo = new GeoipLiteLocator();
  const users = new UsersService(repos.users, { adminPhones: config.ADMIN_PHONES, totpIssuer: config.TOTP_ISSUER });
  const isSiteAdmin = async (userId: string) => {
    const user = await repos.users.findById(userId);
    return user !== null && users.isAdmin(user);
  };
  const contacts = new ContactsService({
    users: repos.users,
    requests: repos.connectionRequests,
    connections: repos.connections,
    blocks: repos.blocks,
    events,
    sms,
    email: emailProvider(config),
    appName: config.TOTP_ISSUER,
  });
  const devices = new DevicesService(repos.devices);
  // A revoked or signed-out device loses its sockets on every hub node, and its inbox, and hangs up
  // the call it is in (the others are told), so it is not left in it, busy.
  devices.onRevoked(async ({ deviceId, userId }) => {
    events.disconnectDevice(deviceId);
    await inbox.drop(deviceId);
    const callId = await repos.calls.callOfDevice(deviceId);
    if (!callId) return;
    const principal = { userId, deviceId };
    const roomCall = await domain.roomCalls.findById(callId);
    await (roomCall ? domain.roomCalls.leave(principal, roomCall) : domain.calls.end(principal, callId)).catch((error: unknown) => {
      logger.warn({ err: error, callId }, 'could not hang up the call of a revoked device');
    });
  });
  const scheduleCallTimeout = async (callId: string, delayMs: number) => {
    await callsQueue.add(JOBS.callTimeout, { callId }, { delay: delayMs, jobId: `timeout-${callId}` });
  };
  const domain = {
    devices,
    users,
    auth: new AuthService({
      config,
      users: repos.users,
      devices: repos.devices,
      loginCodes: repos.loginCodes,
      devicesService: devices,
      events,
      tokens,
      sms,
      redis,
      // Invitations sent to this number become requests to the account, told to the new device.
      afterSignIn: (user) => contacts.claimInvites(user),
    }),
    contacts,
    rooms: new RoomsService({
      rooms: repos.rooms,
      members: repos.roomMembers,
      users: repos.users,
      blocks: repos.blocks,
      events,
      isSiteAdmin,
      supportedLanguages: config.SUPPORTED_LANGUAGES,
    }),
    messages: new MessagesService({
      rooms: repos.rooms,
      members: repos.roomMembers,
      messages: repos.messages,
      blocks: repos.blocks,
      events,
      geo,
      users: repos.users,
      isSiteAdmin,
      supportedLanguages: config.SUPPORTED_LANGUAGES,
    }),
    blocks: new BlocksService(repos.blocks, repos.users, repos.connectionRequests),
    biometric: new BiometricService({
      devices: repos.devices,
      users: repos.users,
      redis,
      redisPrefix: config.REDIS_PREFIX,
      sms,
      events,
      appName: config.TOTP_ISSUER,
    }),
    push: new PushService(repos.devices, inbox, presence, providers.providerFor),
    presence: new PresenceService(presence, repos.devices, repos.connections, repos.roomMembers),
    calls: new CallsService({
      calls: repos.calls,
      users: repos.users,
      blocks: repos.blocks,
      connections: repos.connections,
      roomMembers: repos.roomMembers,
      events,
      ringTimeoutSeconds: config.CALL_RING_TIMEOUT,
      scheduleTimeout: scheduleCallTimeout,
    }),
    roomCalls: new RoomCallsService({
      roomCalls: repos.roomCalls,
      calls: repos.calls,
      rooms: repos.rooms,
      roomMembers: repos.roomMembers,
      events,
      sfu: new SfuClient(redis, config.REDIS_PREFIX, config.SFU_SECRET),
      ringTimeoutSeconds: config.CALL_RING_TIMEOUT,
      maxParticipants: config.ROOM_CALL_MAX_PARTICIPANTS,
      scheduleTimeout: scheduleCallTimeout,
    }),
    ice: new IceService({ secret: config.TURN_SECRET, turnUrls: config.TURN_URLS, stunUrls: config.STUN_URLS, ttlSeconds: config.TURN_CREDENTIAL_TTL }),
  };

  const services = {
    ...domain,
    maintenance: new MaintenanceService(repos.loginCodes, repos.calls, domain.calls, domain.roomCalls),
    media: new MediaService({ attachments: repos.attachments, storage, events }),
    summaries: new SummariesService({
      rooms: repos.rooms,
      members: repos.roomMembers,
      messages: repos.messages,
      users: repos.users,
      events,
      summarizer:
        config.SUMMARIZER === 'openai'
          ? new OpenAiCompatibleSummarizer({ baseUrl: config.OPENAI_BASE_URL ?? '', apiKey: config.OPENAI_API_KEY, model: config.OPENAI_MODEL })
          : new ExtractiveSummarizer(),
      enqueue: async (job) => {
        await summariesQueue.add(JOBS.summarize, job, { jobId: job.requestId });
      },
    }),
    attachments: new AttachmentsService({
      attachments: repos.attachments,
      messages: domain.messages,
      storage,
      // Job data holds the id only; the worker reads the rest.
      enqueueMedia: async (attachmentId) => {
        await mediaQueue.add(JOBS.processAttachment, { attachmentId }, { jobId: `media-${attachmentId}` });
      },
      mediaBacklog: async () => mediaQueue.getJobCountByTypes('waiting', 'delayed', 'prioritized'),
      mediaQueueMax: config.MEDIA_QUEUE_MAX,
      tokens,
      ticketTtlSeconds: config.TICKET_TTL,
      publicBaseUrl: (config.PUBLIC_BASE_URL ?? `http://${config.HOST}:${config.HTTP_PORT}`).replace(/\/$/, ''),
    }),
  };

  return {
    config,
    logger,
    mongo,
    db,
    redis,
    events,
    geo,
    inbox,
    presence,
    queues: { push: pushQueue, calls: callsQueue, media: mediaQueue, summaries: summariesQueue },
    storage,
    transcriber: new PocketsphinxTranscriber(),
    repos,
    services,
    async close() {
      await Promise.allSettled([pushQueue.close(), callsQueue.close(), mediaQueue.close(), summariesQueue.close(), providers.close()]);
      await Promise.allSettled([mongo.close(), redis.quit(), queueConnection.quit(), cacheBus.close()]);
    },
  };
}
