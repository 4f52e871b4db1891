import type { Db, MongoClient } from 'mongodb';
import type { Redis } from 'ioredis';
import { TokenService } from './auth/tokens.js';
import type { Config } from './config/config.js';
import { connectMongo } from './db/mongo.js';
import { DeviceEvents } from './events.js';
import type { Logger } from './logger.js';
import { connectRedis } from './redis.js';
import { DevicesRepo } from './repos/devices.repo.js';
import { LoginCodesRepo } from './repos/login-codes.repo.js';
import { UsersRepo } from './repos/users.repo.js';
import { AuthService } from './services/auth.service.js';
import { DevicesService } from './services/devices.service.js';
import { MaintenanceService } from './services/maintenance.service.js';
import { UsersService } from './services/users.service.js';
import { OutboxSmsProvider } from './sms/outbox.provider.js';
import type { SmsProvider } from './sms/sms.js';
import { TwilioSmsProvider } from './sms/twilio.provider.js';

/** Everything a role needs, wired once per process: connections, repos and services. */
export interface AppContext {
  config: Config;
  logger: Logger;
  mongo: MongoClient;
  db: Db;
  redis: Redis;
  events: DeviceEvents;
  repos: { users: UsersRepo; devices: DevicesRepo; loginCodes: LoginCodesRepo };
  services: { auth: AuthService; users: UsersService; devices: DevicesService; maintenance: MaintenanceService };
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

export async function createContext(config: Config, logger: Logger): Promise<AppContext> {
  const { client: mongo, db } = await connectMongo(config.MONGODB_URL, config.MONGODB_DB);
  const redis = connectRedis(config.REDIS_URL);
  redis.on('error', (error) => logger.warn({ err: error }, 'redis connection error'));

  const repos = { users: new UsersRepo(db), devices: new DevicesRepo(db), loginCodes: new LoginCodesRepo(db) };
  await Promise.all(Object.values(repos).map((repo) => repo.ensureIndexes()));

  const events = new DeviceEvents(redis, config.REDIS_PREFIX);
  const devices = new DevicesService(repos.devices);
  // A revoked or signed-out device loses its sockets on every hub node.
  devices.onRevoked(({ deviceId }) => events.disconnectDevice(deviceId));
  const services = {
    devices,
    users: new UsersService(repos.users, { adminPhones: config.ADMIN_PHONES, totpIssuer: config.TOTP_ISSUER }),
    auth: new AuthService({
      config,
      users: repos.users,
      devices: repos.devices,
      loginCodes: repos.loginCodes,
      devicesService: devices,
      tokens: new TokenService(config.JWT_SECRET, config.ACCESS_TOKEN_TTL, config.TWO_FACTOR_TOKEN_TTL),
      sms: smsProvider(config),
      redis,
    }),
    maintenance: new MaintenanceService(repos.loginCodes),
  };

  return {
    config,
    logger,
    mongo,
    db,
    redis,
    events,
    repos,
    services,
    async close() {
      await Promise.allSettled([mongo.close(), redis.quit()]);
    },
  };
}
