import type { MaintenanceService } from '../../src/maintenance/maintenance.service.js';

/** Removes expired rows and finishes interrupted work (see MaintenanceService). */
export function cleanupProcessor(maintenance: MaintenanceService) {
  return async () => maintenance.cleanupExpired(new Date());
}
