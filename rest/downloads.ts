import type { FastifyReply, FastifyRequest } from 'fastify';
import { servedInline, UNKNOWN_TYPE } from '../src/attachments/content-sniffer.js';
import { CommonErrors } from '../src/platform/common.errors.js';
import type { Config } from '../src/platform/config.js';

/**
 * Every file a member or the service hands out (`/media`, `/exports`): never a page on the service's
 * origin. The browser may not guess a type (nosniff), and whatever it renders runs in a sandbox with
 * nothing allowed (no script, no requests, an opaque origin), even an image opened on its own.
 */
const FILE_CSP = "default-src 'none'; img-src 'self' data:; media-src 'self'; style-src 'unsafe-inline'; sandbox";

/**
 * `Content-Disposition` per RFC 6266 with RFC 8187's `filename*`: an ASCII fallback (anything else,
 * quotes, backslashes and controls become `_`) for old clients, and the name itself in UTF-8.
 */
export function contentDisposition(disposition: 'inline' | 'attachment', filename: string): string {
  const fallback = filename.replace(/[^\x20-\x7e]|["\\]/g, '_');
  // encodeURIComponent leaves ' ( ) * unescaped, which RFC 8187's attr-char does not allow.
  const encoded = encodeURIComponent(filename).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `${disposition}; filename="${fallback}"; filename*=UTF-8''${encoded}`;
}

/**
 * Headers of a file answer: its type and disposition (inline only for the images, audio and video of
 * the allow-list, content-sniffer.ts; anything else a download of octet-stream), no sniffing, and the
 * sandbox CSP.
 */
export function fileHeaders(reply: FastifyReply, file: { contentType: string; filename: string }, options: { download?: boolean } = {}): FastifyReply {
  const inline = !options.download && servedInline(file.contentType);
  return reply
    .header('content-type', inline || options.download ? file.contentType : UNKNOWN_TYPE)
    .header('content-disposition', contentDisposition(inline ? 'inline' : 'attachment', file.filename))
    .header('x-content-type-options', 'nosniff')
    .header('content-security-policy', FILE_CSP);
}

/**
 * With MEDIA_BASE_URL set, files are served on that host alone: a ticket link moved onto the
 * service's own host (where the console lives) answers 404 as a link that never existed.
 */
export function onlyOnMediaHost(config: Pick<Config, 'MEDIA_BASE_URL'>): (request: FastifyRequest) => Promise<void> {
  const host = config.MEDIA_BASE_URL ? new URL(config.MEDIA_BASE_URL).host.toLowerCase() : null;
  return async (request) => {
    if (host && request.host.toLowerCase() !== host) throw CommonErrors.NOT_FOUND({ message: 'No such file' });
  };
}
