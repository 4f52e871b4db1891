import type { MessageChangesService } from '../messages/index.js';
import type { AuthService } from '../auth/index.js';
import type { AnyCallService } from '../calls/index.js';
import type { Platform } from '../platform/platform.js';
import type { EncryptedUploadsService } from '../e2ee/index.js';
import type { InvocationsService, WebhooksService } from '../apps/index.js';
import { MaintenanceService } from './maintenance.service.js';

/** The minute clean-up: each area's expired rows and interrupted work. */
export function maintenanceArea(_p: Platform, deps: { auth: AuthService; calls: AnyCallService; encryptedUploads: EncryptedUploadsService; webhooks: WebhooksService; invocations: InvocationsService; messages: MessageChangesService }) {
  return { maintenance: new MaintenanceService(deps) };
}
