import type { AppContext } from '../../src/context.js';

/** Removes expired rows (login codes and, later, tickets and inbox rows). */
export function cleanupProcessor(ctx: AppContext) {
  return async () => ctx.services.maintenance.cleanupExpired(new Date());
}
