import type { FastifyReply, FastifyRequest } from 'fastify';
import type { WebSession } from '../../src/auth/index.js';
import { AppError } from '../../src/platform/errors.js';
import { AuthErrors } from '../../src/auth/auth.errors.js';
import type { RouteOptions } from '../route-options.js';
import type { Html } from './html.js';
import type { Frame } from './layout.js';

export const COOKIE_NAME = '__Host-console';

/** What each console page module receives. */
export interface ConsoleContext extends RouteOptions {
  frame: (request: FastifyRequest) => Promise<Frame>;
  /** The signed-in session, or a redirect to sign in (thrown). */
  session: (request: FastifyRequest) => WebSession;
  /** Sends a whole page. */
  send: (reply: FastifyReply, request: FastifyRequest, title: string, body: Html | Html[], status?: number) => Promise<FastifyReply>;
  /** The session's cookie value (for what is shown once). */
  cookie: (request: FastifyRequest) => string;
}

/** Thrown to answer with a redirect (to sign in, or after a form: post, redirect, get). */
export class Redirect extends Error {
  constructor(readonly location: string) {
    super(`redirect to ${location}`);
  }
}

/** A form field as posted (urlencoded), trimmed; empty when absent. */
export function field(request: FastifyRequest, name: string): string {
  return String((request.body as Record<string, string | undefined> | undefined)?.[name] ?? '').trim();
}

/** The route option of a console form posted as multipart (a file upload): only such routes take multipart. */
export const MULTIPART_FORM = { schema: { hide: true }, config: { multipartForm: true } } as const;

/**
 * A multipart form's fields and its one file, read whole (the plugin bounds their sizes), with the
 * session's form token checked before anything is returned: 403 CSRF_REFUSED otherwise, as for
 * urlencoded forms (which the plugin's preHandler checks).
 */
export async function multipartForm(request: FastifyRequest, csrfMatches: (given: unknown) => boolean): Promise<{ fields: Record<string, string>; file: string | null }> {
  const fields: Record<string, string> = {};
  let file: string | null = null;
  for await (const part of request.parts()) {
    if (part.type === 'file') {
      const body = (await part.toBuffer()).toString('utf8');
      if (body.trim() !== '') file = body;
    } else fields[part.fieldname] = String(part.value);
  }
  if (!csrfMatches(fields._csrf)) throw AuthErrors.CSRF_REFUSED();
  return { fields, file };
}

/** What an id in a console URL or form may be (the service's ids are UUIDs and base64url). */
export const ID = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * A service's refusal (a 4xx AppError) to show on the form's page; anything else, and the codes in
 * `passOn` (a missing app: the whole page is gone), is thrown on to the error page.
 */
export function refusal(error: unknown, passOn: string[] = []): AppError {
  if (error instanceof AppError && error.status < 500 && !passOn.includes(error.code)) return error;
  throw error;
}
