import type { FastifyInstance, FastifyReply } from 'fastify';
import type { SessionTokens } from '../../src/auth/auth.service.js';
import { html } from './html.js';
import { problem } from './layout.js';
import { COOKIE_NAME, field, Redirect, refusal, type ConsoleContext } from './context.js';


/** The device a browser session is: listed with the member's devices, where revoking it signs the browser out. */
const CONSOLE_DEVICE = { name: 'Developer console (browser)', platform: 'WEB' } as const;

/** Sign-in by texted code (and authenticator code), and sign-out. */
export function signInPages(app: FastifyInstance, ctx: ConsoleContext): void {
  const { services } = ctx;
  const hide = { schema: { hide: true } };

  const phoneForm = (message: string | null, phone = '') => html`${problem(message)}
<form method="post" action="/console/sign-in">
<label for="phone">Phone number</label>
<p class="hint" id="phone-hint">In international form, e.g. +14155550100. We text you a six-digit code.</p>
<input id="phone" name="phone" type="tel" autocomplete="tel" required aria-describedby="phone-hint" value="${phone}">
<button type="submit">Text me a code</button>
</form>`;
  const codeForm = (phone: string, message: string | null) => html`${problem(message)}
<p>We texted a code to <strong>${phone}</strong>.</p>
<form method="post" action="/console/sign-in/code">
<input type="hidden" name="phone" value="${phone}">
<label for="code">Six-digit code</label>
<input id="code" name="code" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9]{6}" required>
<button type="submit">Sign in</button>
</form>
<p><a href="/console/sign-in">Use another number or send a new code</a></p>`;
  const twoFactorForm = (token: string, message: string | null) => html`${problem(message)}
<p>Two-factor authentication is on for this account.</p>
<form method="post" action="/console/sign-in/two-factor">
<input type="hidden" name="twoFactorToken" value="${token}">
<label for="totp">Code from your authenticator app</label>
<input id="totp" name="code" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9]{6}" required>
<button type="submit">Sign in</button>
</form>`;

  // __Host-: sent only to this host, over HTTPS (browsers treat localhost as secure), for every path.
  const sessionCookie = (value: string, maxAge: number) => `${COOKIE_NAME}=${value}; Path=/; HttpOnly; Secure; SameSite=Strict; Max-Age=${maxAge}`;
  const signedIn = async (reply: FastifyReply, tokens: SessionTokens) => {
    reply.header('set-cookie', sessionCookie(await services.webSessions.start(tokens), services.webSessions.ttlSeconds));
    return reply.code(303).header('location', '/console').send();
  };
  const message = (error: unknown) => refusal(error).message;
  /**
   * The status a refused sign-in step answers with: the service's own (429 with Retry-After when a
   * limit is reached, as the REST sign-in answers), 400 for everything else the form shows.
   */
  const statusOf = (reply: FastifyReply, error: unknown): number => {
    const refused = refusal(error);
    if (refused.status !== 429) return 400;
    for (const [name, value] of Object.entries(refused.headers ?? {})) reply.header(name, value);
    return 429;
  };

  app.get('/console/sign-in', hide, async (request, reply) => {
    if (request.consoleSession) throw new Redirect('/console');
    return ctx.send(reply, request, 'Sign in', phoneForm(null));
  });

  app.post('/console/sign-in', hide, async (request, reply) => {
    const phone = field(request, 'phone');
    try {
      await services.auth.requestCode(phone, { ip: request.ip });
    } catch (error) {
      return ctx.send(reply, request, 'Sign in', phoneForm(`${message(error)} Check the number and try again.`, phone), statusOf(reply, error));
    }
    return ctx.send(reply, request, 'Enter your code', codeForm(phone, null));
  });

  app.post('/console/sign-in/code', hide, async (request, reply) => {
    const phone = field(request, 'phone');
    const code = field(request, 'code');
    if (!/^\d{6}$/.test(code)) return ctx.send(reply, request, 'Enter your code', codeForm(phone, 'The code is six digits: type the one we texted you.'), 400);
    let result;
    try {
      result = await services.auth.login({ phone, code, device: CONSOLE_DEVICE }, { ip: request.ip });
    } catch (error) {
      return ctx.send(reply, request, 'Enter your code', codeForm(phone, `${message(error)} Type the code again, or ask for a new one.`), statusOf(reply, error));
    }
    if ('twoFactorRequired' in result) return ctx.send(reply, request, 'Two-factor code', twoFactorForm(result.twoFactorToken, null));
    return signedIn(reply, result);
  });

  app.post('/console/sign-in/two-factor', hide, async (request, reply) => {
    const token = field(request, 'twoFactorToken');
    try {
      return await signedIn(reply, await services.auth.completeTwoFactor({ twoFactorToken: token, code: field(request, 'code') }, { ip: request.ip }));
    } catch (error) {
      return ctx.send(reply, request, 'Two-factor code', twoFactorForm(token, `${message(error)} Type the current code from your authenticator app.`), statusOf(reply, error));
    }
  });

  app.post('/console/sign-out', hide, async (request, reply) => {
    const session = request.consoleSession;
    if (session) await services.webSessions.end(session);
    reply.header('set-cookie', sessionCookie('', 0));
    return reply.code(303).header('location', '/console/sign-in').send();
  });
}
