import fastifyMultipart from '@fastify/multipart';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { WebSession } from '../../src/auth/index.js';
import { AuthErrors } from '../../src/auth/auth.errors.js';
import { AppError } from '../../src/platform/errors.js';
import { CommonErrors } from '../../src/platform/common.errors.js';
import type { RouteOptions } from '../route-options.js';
import { html } from './html.js';
import { CSS, page, problem, type Frame } from './layout.js';
import { appPages } from './apps.pages.js';
import { adminPages } from './admin.pages.js';
import { signInPages } from './sign-in.pages.js';
import { COOKIE_NAME, Redirect, type ConsoleContext } from './context.js';

declare module 'fastify' {
  interface FastifyRequest {
    consoleSession: WebSession | null;
    consoleCookie: string | null;
  }
}

// No script runs on these pages: forms and links only, so the policy allows none.
const CSP = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/** The host of an Origin header; null for "null" (an opaque origin) or anything unreadable. */
function hostOf(origin: string): string | null {
  try {
    return new URL(origin).host;
  } catch {
    return null;
  }
}

function cookieOf(request: FastifyRequest, name: string): string | undefined {
  for (const part of (request.headers.cookie ?? '').split(';')) {
    const [key, ...value] = part.trim().split('=');
    if (key === name) return value.join('=');
  }
  return undefined;
}

/**
 * The developer console and the administrators' pages (docs/apps/console.md): server-rendered HTML
 * under /console, served by the api role, calling the same services as the REST routes. No script:
 * every action is a form (keyboard and screen readers need nothing more), and the Content-Security-Policy
 * allows none. A browser signs in with the phone code (and the authenticator code when two-factor is
 * on) into a session bound to a new device of the member.
 */
export async function consoleRoutes(app: FastifyInstance, options: RouteOptions): Promise<void> {
  const { services, config } = options;
  app.decorateRequest('consoleSession', null);
  app.decorateRequest('consoleCookie', null);
  // Forms post urlencoded bodies (the manifest upload is multipart).
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: 512 * 1024 }, (_request, body, done) => {
    done(null, Object.fromEntries(new URLSearchParams(String(body))));
  });
  await app.register(fastifyMultipart, { limits: { files: 1, fileSize: 256 * 1024, fields: 4, fieldSize: 256 * 1024, parts: 5 } });

  app.addHook('onRequest', async (request) => {
    const cookie = cookieOf(request, COOKIE_NAME);
    request.consoleSession = await services.webSessions.resolve(cookie);
    request.consoleCookie = request.consoleSession ? (cookie ?? null) : null;
  });

  // A form posted from another site is refused: its Origin must be this host, and (when signed in) it
  // must carry the session's token. SameSite=Strict keeps the cookie off cross-site posts as well.
  app.addHook('preHandler', async (request) => {
    if (request.method !== 'POST') return;
    const origin = request.headers.origin;
    if (origin !== undefined && hostOf(origin) !== request.host) throw AuthErrors.CROSS_SITE_REFUSED();
    const session = request.consoleSession;
    if (request.isMultipart()) {
      // Multipart goes only to the routes declared to take it (MULTIPART_FORM), each reading its parts
      // with multipartForm(), which checks the form token: no multipart form escapes the check.
      if (!(request.routeOptions.config as { multipartForm?: boolean }).multipartForm) throw CommonErrors.UNSUPPORTED_MEDIA_TYPE({ message: 'This form is posted urlencoded' });
      return;
    }
    if (!session) return;
    if (!services.webSessions.csrfMatches(session, (request.body as Record<string, unknown> | undefined)?._csrf)) {
      throw AuthErrors.CSRF_REFUSED();
    }
  });

  app.addHook('onSend', async (_request, reply, payload) => {
    reply.header('content-security-policy', CSP);
    // Every page may show a secret or a member's data: none is kept by the browser or a proxy.
    reply.header('cache-control', 'no-store');
    reply.header('x-frame-options', 'DENY');
    reply.header('x-content-type-options', 'nosniff');
    // same-origin, not no-referrer: under no-referrer a browser sends `Origin: null` with the console's own forms.
    reply.header('referrer-policy', 'same-origin');
    return payload;
  });

  const frame = async (request: FastifyRequest): Promise<Frame> => {
    const session = request.consoleSession;
    return {
      environment: config.NODE_ENV,
      signedIn: session ? { userId: session.principal.userId, admin: await services.users.isSiteAdmin(session.principal.userId), csrf: session.csrf } : null,
    };
  };
  const send: ConsoleContext['send'] = async (reply, request, title, body, status = 200) =>
    reply.code(status).type('text/html; charset=utf-8').send(page(await frame(request), title, body).text);

  app.setErrorHandler(async (error: Error & { statusCode?: number; code?: string }, request, reply) => {
    if (error instanceof Redirect) return reply.code(303).header('location', error.location).send();
    if (error instanceof AppError) {
      if (error.status >= 500) request.log.error({ err: error.cause ?? error, code: error.code }, 'console: dependency failure');
      return send(reply, request, error.status === 404 ? 'Not found' : 'Something needs fixing', html`${problem(error.message)}<p>Code: <code>${error.code}</code>. <a href="/console">Back to the console</a></p>`, error.status);
    }
    const away = services.ops.dependencies.noteError(error);
    if (away) return send(reply, request, 'Unavailable', problem(`The service cannot reach its ${away} just now: try again in a minute.`), 503);
    if (typeof error.statusCode === 'number' && error.statusCode >= 400 && error.statusCode < 500) {
      return send(reply, request, 'Something needs fixing', problem(error.message), error.statusCode);
    }
    request.log.error({ err: error }, 'console: unhandled error');
    return send(reply, request, 'Error', problem('Something went wrong on our side; it was logged.'), 500);
  });

  const context: ConsoleContext = {
    ...options,
    frame,
    send,
    session: (request) => {
      if (!request.consoleSession) throw new Redirect('/console/sign-in');
      return request.consoleSession;
    },
    cookie: (request) => {
      if (!request.consoleCookie) throw new Redirect('/console/sign-in');
      return request.consoleCookie;
    },
  };

  app.get('/console/static/console.css', { schema: { hide: true } }, async (_request, reply) => reply.type('text/css; charset=utf-8').send(CSS));
  signInPages(app, context);
  appPages(app, context);
  adminPages(app, context);
}
