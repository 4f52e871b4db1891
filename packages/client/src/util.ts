export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Exponential backoff with full jitter: attempt 0 waits up to `minMs`, each later one up to twice as long, never more than `maxMs`. */
export function backoff(attempt: number, minMs = 500, maxMs = 10_000): number {
  const ceiling = Math.min(maxMs, minMs * 2 ** Math.min(attempt, 16));
  return Math.round(minMs / 2 + Math.random() * (ceiling - minMs / 2));
}

/** A random UUID v4: `crypto.randomUUID` where there is one, else from `crypto.getRandomValues` (React Native with a polyfill). */
export function uuid(): string {
  const crypto = globalThis.crypto;
  if (typeof crypto?.randomUUID === 'function') return crypto.randomUUID();
  const bytes = new Uint8Array(16);
  if (typeof crypto?.getRandomValues === 'function') crypto.getRandomValues(bytes);
  else for (let i = 0; i < 16; i++) bytes[i] = Math.floor(Math.random() * 256);
  bytes[6] = (bytes[6]! & 0x0f) | 0x40;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = [...bytes].map((b) => b.toString(16).padStart(2, '0')).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
