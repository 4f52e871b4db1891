import { Redis } from 'ioredis';

export function connectRedis(url: string, options: { lazy?: boolean } = {}): Redis {
  return new Redis(url, {
    lazyConnect: options.lazy ?? false,
    // BullMQ's workers need this to be null; harmless for the other clients.
    maxRetriesPerRequest: null,
    enableReadyCheck: true,
  });
}

export type { Redis };
