import type { AuthService } from '../auth/auth.service.js';
import type { AnyCallService } from '../calls/any-call.service.js';
import type { Platform } from '../platform/platform.js';
import { MaintenanceService } from './maintenance.service.js';

/** The minute clean-up: each area's expired rows and interrupted work. */
export function maintenanceArea(_p: Platform, deps: { auth: AuthService; calls: AnyCallService }) {
  return { maintenance: new MaintenanceService(deps) };
}
