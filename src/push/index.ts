import type { DevicePushTokens } from '../devices/index.js';
import type { DeviceInbox } from '../inbox/index.js';
import type { Platform } from '../platform/platform.js';
import type { PresenceStore } from '../presence/index.js';
import { pushProviders } from './providers.js';
import { PushService } from './push.service.js';

/**
 * Pushes to offline devices, in the worker. The providers (and their key files) are read on the
 * first push, so roles that never push never touch them.
 */
export function pushArea(p: Platform, deps: { devices: DevicePushTokens; inbox: DeviceInbox; presence: PresenceStore }) {
  let providers: ReturnType<typeof pushProviders> | null = null;
  const open = () => (providers ??= pushProviders(p.config, p.db));
  return {
    push: new PushService(deps.devices, deps.inbox, deps.presence, (service) => open().providerFor(service)),
    close: async () => providers?.close(),
  };
}
