import type { Services } from '../src/composition.js';
import type { Config } from '../src/platform/config.js';

/** What every route plugin receives: the services, and the configuration for what it documents. */
export interface RouteOptions {
  services: Services;
  config: Config;
}
