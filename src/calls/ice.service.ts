import type { z } from 'zod';
import { createHmac } from 'node:crypto';
import type { Principal } from '../platform/principal.js';
import type { IceServersSchema } from './calls.schemas.js';

/** As the IceServers record of the OpenAPI document. */
export type IceServersView = z.infer<typeof IceServersSchema>;

const list = (value: string) => value.split(',').map((url) => url.trim()).filter(Boolean);

/**
 * STUN and TURN servers for WebRTC, with TURN REST API credentials (the scheme coturn's
 * `use-auth-secret` checks): username `<expiry-unix-seconds>:<userId>`, password base64 of
 * HMAC-SHA1 over the username with the shared secret.
 */
export class IceService {
  private readonly turnUrls: string[];
  private readonly stunUrls: string[];

  constructor(
    private readonly options: { secret: string; turnUrls: string; stunUrls: string; ttlSeconds: number },
    private readonly clock: () => Date = () => new Date(),
  ) {
    this.turnUrls = list(options.turnUrls);
    this.stunUrls = list(options.stunUrls);
  }

  servers(principal: Principal): IceServersView {
    const expiry = Math.floor(this.clock().getTime() / 1000) + this.options.ttlSeconds;
    const username = `${expiry}:${principal.userId}`;
    const credential = createHmac('sha1', this.options.secret).update(username).digest('base64');
    const iceServers: IceServersView['iceServers'] = [];
    if (this.stunUrls.length > 0) iceServers.push({ urls: this.stunUrls });
    if (this.turnUrls.length > 0) iceServers.push({ urls: this.turnUrls, username, credential });
    return { iceServers, ttl: this.options.ttlSeconds, expiresAt: new Date(expiry * 1000).toISOString() };
  }
}
