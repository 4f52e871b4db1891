import { Resolver, lookup as dnsLookup, type LookupAddress } from 'node:dns';
import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import { propertyOf } from '../../platform/errors.js';

/** Why a call did not bring a usable reply (spec, "Webhook failures"); CLIENT_ERROR is the app's 4xx. */
export type FailureKind = 'ADDRESS_REFUSED' | 'CONNECTION_FAILED' | 'TIMEOUT' | 'REDIRECT' | 'SERVER_ERROR' | 'NOT_JSON' | 'TOO_LARGE' | 'CONTRACT' | 'CLIENT_ERROR';

export const MAX_REPLY_BYTES = 32_768;

/** Addresses a webhook may never reach: private, loopback, link-local (cloud metadata), unspecified, shared, multicast. */
const FORBIDDEN = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 3],
] as const) {
  FORBIDDEN.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  // IPv4-compatible addresses (::a.b.c.d, deprecated), the unspecified address and loopback among them.
  ['::', 96],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
  ['64:ff9b::', 96],
  ['100::', 64],
  // Tunnels whose addresses carry an IPv4 address inside: 6to4 and Teredo.
  ['2002::', 16],
  ['2001::', 32],
  ['2001:db8::', 32],
] as const) {
  FORBIDDEN.addSubnet(network, prefix, 'ipv6');
}

/** Whether a webhook may connect to this address (IPv4-mapped IPv6 judged as its IPv4 address). */
export function isForbiddenAddress(address: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  // `!`: the pattern matched, so its group is there.
  if (mapped) return FORBIDDEN.check(mapped[1]!, 'ipv4');
  // The same in hexadecimal form, as URL parsing writes it: ::ffff:7f00:1 is 127.0.0.1.
  const hex = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(address);
  if (hex) {
    const [high, low] = [parseInt(hex[1]!, 16), parseInt(hex[2]!, 16)];
    return FORBIDDEN.check(`${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`, 'ipv4');
  }
  const family = isIP(address);
  if (family === 0) return true;
  return FORBIDDEN.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

class AddressRefused extends Error {}
class TimedOut extends Error {}

/** One resolver per DNS server given (it takes any number of queries at once). */
const resolvers = new Map<string, Resolver>();
function resolverFor(server: string): Resolver {
  let resolver = resolvers.get(server);
  if (!resolver) {
    resolver = new Resolver({ timeout: 2_000, tries: 1 });
    resolver.setServers([server]);
    resolvers.set(server, resolver);
  }
  return resolver;
}

/** The addresses of a name: the system's resolver, or the DNS server given (WEBHOOK_DNS_SERVER, host:port). */
function resolveAll(hostname: string, server: string | undefined, callback: (error: Error | null, addresses: LookupAddress[]) => void): void {
  if (!server) return dnsLookup(hostname, { all: true }, (error, addresses) => callback(error, addresses ?? []));
  const resolver = resolverFor(server);
  resolver.resolve4(hostname, (error4, v4) => {
    resolver.resolve6(hostname, (_error6, v6) => {
      const addresses = [...(v4 ?? []).map((address) => ({ address, family: 4 })), ...(v6 ?? []).map((address) => ({ address, family: 6 }))];
      callback(addresses.length === 0 ? (error4 ?? new Error(`${hostname} has no address`)) : null, addresses);
    });
  });
}

/** DNS answers filtered to allowed addresses: a name that resolves only to forbidden ones fails, so none is ever dialled. */
const guardedLookup =
  (server: string | undefined): LookupFunction =>
  (hostname, options, callback) => {
    resolveAll(hostname, server, (error, addresses) => {
      if (error) return callback(error, '', 0);
      const allowed = addresses.filter((a) => !isForbiddenAddress(a.address) && (!options.family || a.family === options.family));
      if (allowed.length === 0) return callback(new AddressRefused(`${hostname} resolves only to addresses webhooks may not reach`), '', 0);
      // Cast: with options.all, node:dns callers expect the list form of the lookup callback, which LookupFunction's type does not name.
      if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, allowed);
      // `!`: an empty list was answered above.
      callback(null, allowed[0]!.address, allowed[0]!.family);
    });
  };

/** What a pooled connection the app had closed gives when a call is written to it (no answer byte came). */
const STALE_CONNECTION = new Set(['ECONNRESET', 'EPIPE', 'ECONNABORTED']);

// Connections are kept for the next call to the same app; cookies are never stored or sent.
const agents = { http: new http.Agent({ keepAlive: true, maxSockets: 64 }), https: new https.Agent({ keepAlive: true, maxSockets: 64 }) };

/**
 * Whether a webhook URL may be set: https (or http when private targets are allowed), and no forbidden
 * address literal. The problem is said as the rest of a sentence that begins "The webhook URL", naming
 * the rule.
 */
export function webhookUrlProblem(text: string, allowPrivate: boolean): string | null {
  const rule = allowPrivate ? 'an absolute https:// or http:// URL' : 'an absolute https:// URL to a public address';
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return `is not a URL: it must be ${rule}, such as https://app.example.com/webhook`;
  }
  if (url.protocol !== 'https:' && !(allowPrivate && url.protocol === 'http:')) return `must be ${rule}: ${url.protocol.replace(/:$/, '')} is not allowed`;
  if (url.username || url.password) return 'must not carry a user name or password';
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (!allowPrivate && (isIP(host) !== 0 ? isForbiddenAddress(host) : host === 'localhost' || host.endsWith('.localhost'))) return 'must be a public address: loopback, private and link-local addresses are refused';
  return null;
}

export interface WebhookReply {
  status: number | null;
  /** The reply's body as read (at most MAX_REPLY_BYTES), or null. */
  body: Buffer | null;
  /** The parsed JSON reply when the contract holds. */
  json: unknown;
  failure: FailureKind | null;
  /** The reply's Retry-After, in seconds, when it gave one. */
  retryAfterSeconds: number | null;
  ms: number;
}

/** Retry-After as seconds: a number of seconds or an HTTP date. */
function retryAfterOf(header: string | undefined, now: number): number | null {
  if (!header) return null;
  if (/^\d+$/.test(header.trim())) return Number(header.trim());
  const at = Date.parse(header);
  return Number.isNaN(at) ? null : Math.max(0, Math.round((at - now) / 1000));
}

/**
 * One POST to an app's webhook: never to a forbidden address (checked on the DNS answer and again on
 * the address the socket actually connected to), no redirect followed, no cookie sent, the whole call
 * within `timeoutMs`, the reply read up to 32768 bytes and cut off there. The reply is classified:
 * `okStatus` (200, or any 2xx for payment events) with a JSON content type and a JSON body is a reply;
 * anything else is one of the failure kinds.
 */
export function postWebhook(call: {
  url: string;
  headers: Record<string, string>;
  body: Buffer;
  timeoutMs: number;
  allowPrivate: boolean;
  okStatus: (status: number) => boolean;
  /** False for payment events: any 2xx is an answer, with or without a JSON body. */
  jsonRequired?: boolean;
  /** A DNS server to ask instead of the system's resolver (host:port). */
  dnsServer?: string | undefined;
}): Promise<WebhookReply> {
  const started = performance.now();
  let retryAfterSeconds: number | null = null;
  const done = (reply: Omit<WebhookReply, 'ms' | 'retryAfterSeconds'>): WebhookReply => ({ ...reply, retryAfterSeconds, ms: Math.round(performance.now() - started) });
  const failed = (failure: FailureKind, status: number | null = null, body: Buffer | null = null) => done({ status, body, json: null, failure });
  const problem = webhookUrlProblem(call.url, call.allowPrivate);
  if (problem) return Promise.resolve(failed('ADDRESS_REFUSED'));
  const url = new URL(call.url);

  return new Promise((resolve) => {
    let settled = false;
    const finish = (reply: WebhookReply) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(reply);
    };
    let request: http.ClientRequest;
    const timer = setTimeout(() => request.destroy(new TimedOut()), call.timeoutMs);
    /**
     * Sends the call: on a pooled connection first, and once more on a new one when the pooled
     * connection turns out closed before any answer came (the app closed it idle as it was taken).
     */
    const send = (pooled: boolean) => {
      request = (url.protocol === 'https:' ? https : http).request(url, {
        method: 'POST',
        headers: { ...call.headers, 'content-length': String(call.body.length) },
        agent: pooled ? (url.protocol === 'https:' ? agents.https : agents.http) : false,
        ...(call.allowPrivate ? {} : { lookup: guardedLookup(call.dnsServer) }),
      });
      const sent = request;
      let responded = false;
      sent.on('socket', (socket) => {
        const check = () => {
          if (!call.allowPrivate && socket.remoteAddress && isForbiddenAddress(socket.remoteAddress)) sent.destroy(new AddressRefused('connected to a forbidden address'));
        };
        if (socket.connecting) socket.once('connect', check);
        else check();
      });
      sent.on('error', (error) => {
        if (pooled && sent.reusedSocket && !responded && !settled && STALE_CONNECTION.has(String(propertyOf(error, 'code')))) return send(false);
        finish(failed(error instanceof TimedOut ? 'TIMEOUT' : error instanceof AddressRefused || propertyOf(error, 'cause') instanceof AddressRefused ? 'ADDRESS_REFUSED' : 'CONNECTION_FAILED'));
      });
      sent.on('response', (response: IncomingMessage) => {
        responded = true;
        answered(response);
      });
      sent.end(call.body);
    };
    const answered = (response: IncomingMessage) => {
      const status = response.statusCode ?? 0;
      retryAfterSeconds = retryAfterOf(response.headers['retry-after'], Date.now());
      const chunks: Buffer[] = [];
      let size = 0;
      response.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > MAX_REPLY_BYTES) {
          chunks.push(chunk.subarray(0, chunk.length - (size - MAX_REPLY_BYTES)));
          response.destroy();
          finish(failed('TOO_LARGE', status, Buffer.concat(chunks)));
          return;
        }
        chunks.push(chunk);
      });
      response.on('error', () => finish(failed('CONNECTION_FAILED', status)));
      response.on('end', () => {
        const body = Buffer.concat(chunks);
        if (status >= 300 && status < 400) return finish(failed('REDIRECT', status, body));
        if (status >= 400 && status < 500) return finish(failed('CLIENT_ERROR', status, body));
        if (status >= 500) return finish(failed('SERVER_ERROR', status, body));
        if (!call.okStatus(status)) return finish(failed('CONTRACT', status, body));
        const isJson = /^application\/([a-z0-9.+-]+\+)?json\s*(;|$)/i.test(response.headers['content-type'] ?? '');
        if (call.jsonRequired === false && (!isJson || body.length === 0)) return finish(done({ status, body, json: null, failure: null }));
        if (!/^application\/([a-z0-9.+-]+\+)?json\s*(;|$)/i.test(response.headers['content-type'] ?? '')) return finish(failed('NOT_JSON', status, body));
        try {
          finish(done({ status, body, json: JSON.parse(body.toString('utf8')), failure: null }));
        } catch {
          finish(failed('NOT_JSON', status, body));
        }
      });
    };
    send(true);
  });
}
