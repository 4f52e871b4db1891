import { readFileSync } from 'node:fs';
import type { Db } from 'mongodb';
import type { Config } from '../platform/config.js';
import { ApnsPushProvider } from './apns.provider.js';
import { FcmPushProvider, FcmServiceAccountSchema } from './fcm.provider.js';
import { LocalPushProvider } from './local.provider.js';
import { PushRecordsRepo } from './push-records.repo.js';
import type { PushProvider, PushTarget } from './push.js';
import { PacedPushProvider } from './pacing.js';

/**
 * The provider for each push service, from configuration: the recording one, or APNs and FCM; each
 * paced (PacedPushProvider: a "not now" from the service holds every push to it until the time asked).
 */
export function pushProviders(config: Config, db: Db): { providerFor: (service: PushTarget['service']) => PushProvider | null; close(): Promise<void> } {
  if (config.PUSH_PROVIDER === 'local') {
    const local = new PacedPushProvider(new LocalPushProvider(new PushRecordsRepo(db), config.PUSH_LOCAL_RATE));
    return { providerFor: () => local, close: async () => {} };
  }
  const apns =
    config.APNS_KEY_ID && config.APNS_TEAM_ID && config.APNS_PRIVATE_KEY_FILE && config.APNS_BUNDLE_ID
      ? new PacedPushProvider(new ApnsPushProvider({
          keyId: config.APNS_KEY_ID,
          teamId: config.APNS_TEAM_ID,
          privateKey: readFileSync(config.APNS_PRIVATE_KEY_FILE, 'utf8'),
          bundleId: config.APNS_BUNDLE_ID,
          origin: config.APNS_ORIGIN,
        }))
      : null;
  const fcm = config.FCM_SERVICE_ACCOUNT_FILE
    ? new PacedPushProvider(new FcmPushProvider(FcmServiceAccountSchema.parse(JSON.parse(readFileSync(config.FCM_SERVICE_ACCOUNT_FILE, 'utf8'))), config.FCM_API_BASE))
    : null;
  return {
    providerFor: (service) => (service === 'APNS' ? apns : fcm),
    close: async () => {
      await Promise.all([apns?.close(), fcm?.close()]);
    },
  };
}
