import { createRequire } from 'node:module';
import net from 'node:net';

/** A place: coordinates, with the country and city where known. */
export interface GeoLocation {
  latitude: number;
  longitude: number;
  country?: string | null;
  city?: string | null;
}

export interface GeoLocator {
  /** Where an IP address is, or null for private, loopback and unknown addresses. */
  locate(ip: string): GeoLocation | null;
}

interface GeoipLite {
  lookup(ip: string): { country: string; city: string; ll: [number, number] } | null;
}

const PRIVATE_V4 = [/^10\./, /^127\./, /^169\.254\./, /^172\.(1[6-9]|2\d|3[01])\./, /^192\.168\./, /^100\.(6[4-9]|[7-9]\d|1[01]\d|12[0-7])\./, /^0\./];

export function isPublicIp(ip: string): boolean {
  const version = net.isIP(ip);
  if (version === 4) return !PRIVATE_V4.some((range) => range.test(ip));
  if (version === 6) return !/^(::1?$|fe80:|fc|fd|::ffff:(10|127|192\.168)\.)/i.test(ip);
  return false;
}

/**
 * The offline GeoLite2 database that ships inside `geoip-lite`. Loaded on first use (about 150 MB),
 * so only processes that need it pay for it.
 */
export class GeoipLiteLocator implements GeoLocator {
  private db: GeoipLite | null = null;

  locate(ip: string): GeoLocation | null {
    const address = ip.replace(/^::ffff:(?=\d+\.)/, '');
    if (!isPublicIp(address)) return null;
    // Cast: geoip-lite ships no types; GeoipLite declares the one function used.
    this.db ??= createRequire(import.meta.url)('geoip-lite') as GeoipLite;
    const found = this.db.lookup(address);
    if (!found) return null;
    return { latitude: found.ll[0], longitude: found.ll[1], country: found.country || null, city: found.city || null };
  }
}
