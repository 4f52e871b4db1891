import type * as Uws from 'uWebSockets.js';
import { propertyOf } from '../src/platform/errors.js';

export type UwsModule = typeof Uws;

/** The hub was asked for uWebSockets.js and its native addon cannot run here: never a silent fallback. */
export class UwsUnavailableError extends Error {}

/** The glibc this process runs on, as the runtime reports it ("2.36"), or "none" off glibc. */
function glibcVersion(): string {
  const runtime = propertyOf(propertyOf(process.report.getReport(), 'header'), 'glibcVersionRuntime');
  return typeof runtime === 'string' ? runtime : 'none';
}

/**
 * Loads the uWebSockets.js addon (a binary for this platform and Node ABI, linked against glibc 2.38
 * or newer). Imported on demand, so a hub on `ws` never touches it.
 */
export async function loadUws(): Promise<UwsModule> {
  try {
    // The ESM wrapper's default export is the CommonJS module, typed as the package's named exports.
    const loaded = (await import('uWebSockets.js')) as unknown as { default: UwsModule };
    if (typeof loaded.default.App !== 'function') throw new Error('the module has no App()');
    return loaded.default;
  } catch (error) {
    const reason = (error instanceof Error ? error.message : String(error)).split('\n').filter(Boolean).at(-1);
    throw new UwsUnavailableError(
      `SOCKET_ENGINE=uws, but the uWebSockets.js addon does not load on Node ${process.version} (${process.platform}-${process.arch}, ` +
        `glibc ${glibcVersion()}; it needs Node 20, 22, 24 or 25 and glibc 2.38 or newer): ${reason}. ` +
        'Run the hub on the project image or `npm start` (they bring a runtime that loads it), or set SOCKET_ENGINE=ws.',
    );
  }
}
