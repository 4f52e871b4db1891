import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ActivityView } from '../../src/apps/delivery/webhooks.service.js';
import type { AppView } from '../../src/apps/console/console.service.js';
import { AppsErrors } from '../../src/apps/apps.errors.js';
import type { WebSession } from '../../src/auth/index.js';
import { CommonErrors } from '../../src/platform/common.errors.js';
import { html, type Html } from './html.js';
import { csrfField, notice, problem, shownOnce } from './layout.js';
import { annotated, syntaxErrorPlace, type Problem } from './manifest-view.js';
import { field, ID, MULTIPART_FORM, multipartForm, Redirect, refusal, type ConsoleContext } from './context.js';

type Params = { appId: string };
const OUTCOMES = ['OK', 'APP_ERROR', 'FAILED'] as const;

function appId(request: FastifyRequest): string {
  const id = (request.params as Params).appId;
  if (!ID.test(id)) throw AppsErrors.APP_NOT_FOUND({ message: 'No such app' });
  return id;
}

function activityId(request: FastifyRequest): string {
  const id = (request.params as { activityId: string }).activityId;
  if (!ID.test(id)) throw AppsErrors.APP_NOT_FOUND({ message: 'No such activity row' });
  return id;
}

/** What broke, in words: the failure, where the contract broke, the app's own error code. */
function whatBroke(row: ActivityView): string {
  const parts = [row.failure, row.detail, row.appErrorCode ? `app error code ${row.appErrorCode}` : null].filter((part): part is string => Boolean(part));
  return parts.join(' · ') || '—';
}

function time(iso: string | null): Html {
  return iso ? html`<time datetime="${iso}">${iso.replace('T', ' ').replace(/\.\d+Z$/, ' UTC')}</time>` : html`—`;
}

function left(iso: string, now: number): string {
  const ms = Date.parse(iso) - now;
  const hours = Math.floor(ms / 3_600_000);
  const minutes = Math.floor((ms % 3_600_000) / 60_000);
  return `${hours} h ${minutes} min left`;
}

/** The developer's pages: apps, one app (webhook, secrets, keys), the manifest editor, the activity, the test console. */
export function appPages(app: FastifyInstance, ctx: ConsoleContext): void {
  const { services } = ctx;
  const { apps } = services;
  const hide = { schema: { hide: true } };
  // As GET /api/apps/{id} answers: the caller's own app.
  const appView = async (principal: WebSession['principal'], id: string) => apps.present(await apps.owned(principal, id));

  /** Keeps a secret for the next page and redirects there (post, redirect, get: a reload shows nothing). */
  const showNext = async (request: FastifyRequest, label: string, secret: string, to: string) => {
    const shown = await services.webSessions.keepToShowOnce(ctx.cookie(request), ctx.session(request), JSON.stringify({ label, secret }));
    throw new Redirect(`${to}?shown=${shown}`);
  };
  const takeShown = async (request: FastifyRequest): Promise<Html> => {
    const shown = (request.query as { shown?: string }).shown;
    if (!shown) return html``;
    const text = await services.webSessions.takeShown(ctx.cookie(request), ctx.session(request), shown);
    if (!text) return notice('That secret was shown once already and is not kept in a form anyone can read. Rotate or create a new one if you did not copy it.');
    const { label, secret } = JSON.parse(text) as { label: string; secret: string };
    return shownOnce(label, secret);
  };

  // My apps.
  const createForm = (csrf: string, message: string | null, values: { name?: string; webhookUrl?: string } = {}) => html`<section aria-labelledby="create-h">
<h2 id="create-h">Create an app</h2>
${problem(message)}
<form method="post" action="/console/apps">${csrfField(csrf)}
<label for="name">Name</label>
<input id="name" name="name" required maxlength="100" value="${values.name ?? ''}">
<label for="webhookUrl">Webhook URL</label>
<p class="hint" id="url-hint">Where the service sends signed calls (HTTPS; private addresses are refused outside development).</p>
<input id="webhookUrl" name="webhookUrl" type="url" required aria-describedby="url-hint" value="${values.webhookUrl ?? ''}">
<button type="submit">Create app</button>
</form></section>`;
  const appsPage = async (request: FastifyRequest, reply: FastifyReply, message: string | null = null, values = {}, status = 200) => {
    const session = ctx.session(request);
    const cards = await apps.overviews(session.principal);
    return ctx.send(
      reply,
      request,
      'My apps',
      html`${cards.length === 0
        ? html`<p>No apps yet.</p>`
        : html`<ul class="cards">${cards.map(
            ({ app: view, breakerOpen, installs }) => html`<li><h2><a href="/console/apps/${view.id}">${view.name}</a></h2>
<p>Health: <strong class="health-${view.health}">${view.health}</strong> · Breaker: ${breakerOpen ? html`<strong class="health-DOWN">open</strong>` : 'closed'} · Installs: ${installs}</p>
<p>Manifest: ${view.manifestVersion ?? 'none yet'}</p></li>`,
          )}</ul>`}
${createForm(session.csrf, message, values)}`,
      status,
    );
  };

  app.get('/console', hide, async (request, reply) => appsPage(request, reply));

  app.post('/console/apps', hide, async (request, reply) => {
    const session = ctx.session(request);
    const values = { name: field(request, 'name'), webhookUrl: field(request, 'webhookUrl') };
    if (values.name.length < 1 || values.name.length > 100) return appsPage(request, reply, 'Give the app a name of 1 to 100 characters.', values, 400);
    let created;
    try {
      created = await apps.create(session.principal, values);
    } catch (error) {
      return appsPage(request, reply, `${refusal(error).message}. Give an https:// URL of your app's server.`, values, 400);
    }
    return showNext(request, 'Your webhook signing secret', created.webhookSecret, `/console/apps/${created.id}`);
  });

  // One app.
  const appPage = async (request: FastifyRequest, reply: FastifyReply, extra: { top?: Html; webhookUrl?: string; status?: number } = {}) => {
    const session = ctx.session(request);
    const id = appId(request);
    const { app: view, breakerOpen, breakerOpenUntil, installs } = await apps.overview(session.principal, id);
    const credentials = await apps.credentials(session.principal, id);
    const now = Date.now();
    const csrf = csrfField(session.csrf);
    return ctx.send(
      reply,
      request,
      view.name,
      html`${await takeShown(request)}${extra.top ?? ''}
<nav aria-label="This app"><a href="/console/apps/${id}/manifest">Manifest</a> · <a href="/console/apps/${id}/activity">Activity</a> · <a href="/console/apps/${id}/test">Test console</a></nav>
<dl class="facts">
<dt>App id</dt><dd><code>${id}</code></dd>
<dt>Health</dt><dd><strong class="health-${view.health}">${view.health}</strong></dd>
<dt>Breaker</dt><dd>${breakerOpen && breakerOpenUntil
  ? html`open: after 5 failures within a minute, calls are not sent until ${time(breakerOpenUntil)} (the failures are on the <a href="/console/apps/${id}/activity">activity list</a>)
<form method="post" action="/console/apps/${id}/breaker/close" class="inline">${csrf}<button type="submit">Close it now</button></form>`
  : 'closed'}</dd>
<dt>Installs</dt><dd>${installs}</dd>
<dt>Manifest</dt><dd>${view.manifestVersion ?? 'none yet'}</dd>
<dt>Reply time</dt><dd>${view.replyTimeoutSeconds} s</dd>
<dt>Payments</dt><dd>${view.testMode ? html`<strong class="test-mode">test mode</strong>: the payments the app asks for are test payments (members see them marked as tests; confirming one moves no money)` : 'live: the payments the app asks for move members\' money'}
<form method="post" action="/console/apps/${id}/test-mode" class="inline">${csrf}<input type="hidden" name="testMode" value="${view.testMode ? 'false' : 'true'}"><button type="submit" class="secondary">${view.testMode ? 'Go live' : 'Switch to test mode'}</button></form></dd>
</dl>
<section aria-labelledby="webhook-h"><h2 id="webhook-h">Webhook URL</h2>
<p>Now: <code>${view.webhookUrl}</code>. A new URL is saved only once it answers a signed ping with a pong.</p>
<form method="post" action="/console/apps/${id}/webhook">${csrf}
<label for="webhookUrl">New webhook URL</label>
<input id="webhookUrl" name="webhookUrl" type="url" required value="${extra.webhookUrl ?? ''}">
<button type="submit">Ping it and save</button>
</form>
<form method="post" action="/console/apps/${id}/ping">${csrf}<button type="submit" class="secondary">Ping the current URL now</button></form>
</section>
<section aria-labelledby="secret-h"><h2 id="secret-h">Webhook signing secret</h2>
${rotation(view, now)}
<form method="post" action="/console/apps/${id}/secret/rotate">${csrf}<button type="submit">Rotate the secret</button></form>
</section>
<section aria-labelledby="keys-h"><h2 id="keys-h">Bot tokens and payments keys</h2>
${credentials.length === 0
  ? html`<p>None in force.</p>`
  : html`<table><thead><tr><th scope="col">Kind</th><th scope="col">Prefix</th><th scope="col">Room</th><th scope="col">Created</th><th scope="col"><span class="skip">Revoke</span></th></tr></thead><tbody>
${credentials.map((c) => html`<tr><td>${c.kind === 'BOT_TOKEN' ? 'Bot token' : c.test ? 'Test payments key' : 'Payments key'}</td><td><code>${c.prefix}</code></td><td>${c.roomId ?? (c.kind === 'BOT_TOKEN' ? 'every room of the app' : '—')}</td><td>${time(c.createdAt)}</td>
<td><form method="post" action="/console/apps/${id}/credentials/${c.id}/revoke" class="inline">${csrf}<button type="submit" class="danger" aria-label="Revoke ${c.prefix}">Revoke</button></form></td></tr>`)}
</tbody></table>`}
<form method="post" action="/console/apps/${id}/payment-keys">${csrf}<button type="submit">New payments key</button></form>
<form method="post" action="/console/apps/${id}/payment-keys">${csrf}<input type="hidden" name="test" value="true"><button type="submit" class="secondary">New test payments key</button></form>
<form method="post" action="/console/apps/${id}/bot-tokens">${csrf}
<label for="roomId">Room id for a new bot token</label>
<p class="hint" id="room-hint">A room the app was added to; leave it empty for a token that opens every room the app is in.</p>
<input id="roomId" name="roomId" aria-describedby="room-hint">
<button type="submit">New bot token</button>
</form></section>
<section aria-labelledby="delete-h"><h2 id="delete-h">Delete this app</h2>
<p>Only once no money is with it (its balance paid out or refunded, no payment open). It leaves every room, its tokens and keys stop, members' installs go; its cards stay in the rooms.</p>
<form method="post" action="/console/apps/${id}/delete">${csrf}
<label for="confirm">Type the app's name to delete it</label>
<input id="confirm" name="confirm" required autocomplete="off">
<button type="submit" class="danger">Delete the app</button>
</form></section>`,
      extra.status,
    );
  };
  const rotation = (view: AppView, now: number) =>
    view.previousSecretValidUntil
      ? html`<p>Rotating: calls carry both signatures until ${time(view.previousSecretValidUntil)} (<span data-overlap>${left(view.previousSecretValidUntil, now)}</span>); then only the new secret signs.</p>`
      : html`<p>One secret signs every call. Rotating makes a new one (shown once); the old one keeps signing for 24 hours beside it.</p>`;

  app.get('/console/apps/:appId', hide, async (request, reply) => appPage(request, reply));

  app.post('/console/apps/:appId/webhook', hide, async (request, reply) => {
    const session = ctx.session(request);
    const webhookUrl = field(request, 'webhookUrl');
    try {
      const { saved, ping } = await apps.saveWebhookUrlAfterPing(session.principal, appId(request), webhookUrl);
      if (saved) return appPage(request, reply, { top: notice(`Saved: ${webhookUrl} answered the signed ping in ${ping.ms} ms.`) });
      return appPage(request, reply, { top: problem(`Not saved: ${webhookUrl} did not answer the signed ping with a pong (${whatBroke(ping)}). Make your server answer {"type":"pong"} to a ping, then try again.`), webhookUrl, status: 400 });
    } catch (error) {
      return appPage(request, reply, { top: problem(`Not saved: ${refusal(error, ['APP_NOT_FOUND']).message}.`), webhookUrl, status: 400 });
    }
  });

  app.post('/console/apps/:appId/ping', hide, async (request, reply) => {
    const ping = await apps.pingNow(ctx.session(request).principal, appId(request));
    return appPage(request, reply, { top: ping.outcome === 'OK' ? notice(`Pong in ${ping.ms} ms.`) : problem(`The ping failed: ${whatBroke(ping)}.`) });
  });

  app.post('/console/apps/:appId/delete', hide, async (request, reply) => {
    const session = ctx.session(request);
    const id = appId(request);
    const view = await appView(session.principal, id);
    if (field(request, 'confirm').trim() !== view.name) return appPage(request, reply, { top: problem(`Not deleted: type the app's name, ${view.name}, to confirm.`), status: 400 });
    try {
      await apps.deleteApp(session.principal, id);
    } catch (error) {
      return appPage(request, reply, { top: problem(`Not deleted: ${refusal(error, ['APP_NOT_FOUND']).message}.`), status: 400 });
    }
    return reply.code(303).header('location', '/console').send();
  });

  app.post('/console/apps/:appId/breaker/close', hide, async (request, reply) => {
    await apps.closeBreaker(ctx.session(request).principal, appId(request));
    return appPage(request, reply, { top: notice('The breaker is closed: the next call goes to the app.') });
  });

  app.post('/console/apps/:appId/secret/rotate', hide, async (request) => {
    const id = appId(request);
    const rotated = await apps.rotateSecret(ctx.session(request).principal, id);
    return showNext(request, 'Your new webhook signing secret', rotated.webhookSecret, `/console/apps/${id}`);
  });

  app.post('/console/apps/:appId/payment-keys', hide, async (request) => {
    const id = appId(request);
    const test = field(request, 'test') === 'true';
    const created = await apps.createCredential(ctx.session(request).principal, id, 'PAYMENT_KEY', null, { test });
    return showNext(request, test ? 'Your new test payments key' : 'Your new payments key', created.token, `/console/apps/${id}`);
  });

  app.post('/console/apps/:appId/test-mode', hide, async (request, reply) => {
    const testMode = field(request, 'testMode') === 'true';
    await apps.update(ctx.session(request).principal, appId(request), { testMode });
    return appPage(request, reply, { top: notice(testMode ? 'Test mode: the payments the app asks for from now on are test payments.' : 'Live: the payments the app asks for from now on move members\' money.') });
  });

  app.post('/console/apps/:appId/bot-tokens', hide, async (request, reply) => {
    const id = appId(request);
    // Empty: the app's token, for every room it is in.
    const roomId = field(request, 'roomId').trim();
    let created;
    try {
      if (roomId !== '' && !ID.test(roomId)) throw CommonErrors.VALIDATION_FAILED({ message: 'A room id is letters, digits, - and _' });
      created = await apps.createCredential(ctx.session(request).principal, id, 'BOT_TOKEN', roomId === '' ? null : roomId);
    } catch (error) {
      return appPage(request, reply, { top: problem(`No bot token made: ${refusal(error, ['APP_NOT_FOUND']).message}. Add the app to the room first, then try again.`), status: 400 });
    }
    return showNext(request, 'Your new bot token', created.token, `/console/apps/${id}`);
  });

  app.post('/console/apps/:appId/credentials/:credentialId/revoke', hide, async (request, reply) => {
    const { credentialId } = request.params as { credentialId: string };
    if (!ID.test(credentialId)) throw AppsErrors.CREDENTIAL_NOT_FOUND();
    await apps.revokeCredential(ctx.session(request).principal, appId(request), credentialId);
    return appPage(request, reply, { top: notice('Revoked: it stopped working at once.') });
  });

  // The manifest editor.
  const manifestPage = async (request: FastifyRequest, reply: FastifyReply, state: { text?: string; result?: Html; status?: number } = {}) => {
    const session = ctx.session(request);
    const id = appId(request);
    const [view, manifests] = await Promise.all([appView(session.principal, id), apps.manifestHistory(session.principal, id)]);
    const version = (request.query as { version?: string }).version ?? view.manifestVersion;
    const text = state.text ?? (version ? await apps.manifestText(session.principal, id, version) : '');
    return ctx.send(
      reply,
      request,
      `${view.name}: manifest`,
      html`<p><a href="/console/apps/${id}">Back to ${view.name}</a></p>
${state.result ?? ''}
<form method="post" action="/console/apps/${id}/manifest" enctype="multipart/form-data">${csrfField(session.csrf)}
<label for="manifest">Manifest (JSON)</label>
<p class="hint" id="manifest-hint">Paste it here, or choose a file below (a file wins). Checked by the same rules as the REST upload; problems are shown at their line.</p>
<textarea id="manifest" name="manifest" rows="18" aria-describedby="manifest-hint">${text}</textarea>
<label for="file">Or upload a file</label>
<input id="file" name="file" type="file" accept="application/json,.json">
<button type="submit">Check and save</button>
</form>
<section aria-labelledby="history-h"><h2 id="history-h">Version history</h2>
${manifests.length === 0 ? html`<p>No version uploaded yet.</p>` : html`<table><thead><tr><th scope="col">Version</th><th scope="col">Uploaded</th><th scope="col">Hash</th><th scope="col"><span class="skip">Make current</span></th></tr></thead><tbody>
${manifests.map((m) => html`<tr><td><a href="/console/apps/${id}/manifest?version=${encodeURIComponent(m.version)}">${m.version}</a>${m.version === view.manifestVersion ? ' (current)' : ''}</td><td>${time(m.createdAt)}</td><td><code>${m.hash}</code></td>
<td>${m.version === view.manifestVersion ? '' : html`<form method="post" action="/console/apps/${id}/manifest/current" class="inline">${csrfField(session.csrf)}<input type="hidden" name="version" value="${m.version}"><button type="submit" aria-label="Make ${m.version} current">Make current</button></form>`}</td></tr>`)}
</tbody></table>`}</section>`,
      state.status,
    );
  };

  app.get('/console/apps/:appId/manifest', hide, async (request, reply) => manifestPage(request, reply));

  app.post('/console/apps/:appId/manifest/current', hide, async (request, reply) => {
    const version = field(request, 'version');
    const made = await apps.makeManifestCurrent(ctx.session(request).principal, appId(request), version);
    return manifestPage(request, reply, { result: notice(`Version ${made.version} is current again: members who install from now on get it.`) });
  });

  app.post('/console/apps/:appId/manifest', MULTIPART_FORM, async (request, reply) => {
    const session = ctx.session(request);
    const id = appId(request);
    if (!request.isMultipart()) throw CommonErrors.UNSUPPORTED_MEDIA_TYPE({ message: 'Send the manifest form as the page does (multipart/form-data)' });
    const { fields, file } = await multipartForm(request, (given) => services.webSessions.csrfMatches(session, given));
    const text = file ?? fields.manifest ?? '';
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (error) {
      const place = syntaxErrorPlace(text, error as Error);
      const where = place ? `line ${place.line}, column ${place.column}` : 'somewhere';
      return manifestPage(request, reply, { text, result: problem(`Not saved: the manifest is not valid JSON (${where}: ${(error as Error).message}). Fix it there and send it again.`), status: 400 });
    }
    try {
      const saved = await apps.putManifest(session.principal, id, parsed);
      return manifestPage(request, reply, { text: JSON.stringify(parsed, null, 2), result: notice(`Saved version ${saved.version} (hash ${saved.manifestHash}). Members move to it when they update.`) });
    } catch (error) {
      const refused = refusal(error, ['APP_NOT_FOUND']);
      const problems: Problem[] = (refused.details ?? []).map((d) => ({ path: String(d.path ?? d.field ?? ''), message: String(d.message ?? '') }));
      const result = problems.length > 0 ? html`${problem(`Not saved: ${refused.code === 'MANIFEST_INVALID' ? 'the manifest has problems' : refused.message}. Fix each one where it is marked, then send it again.`)}${annotated(parsed, problems)}` : problem(`Not saved: ${refused.message}`);
      // The editor holds it as the marked view prints it, so their line numbers agree.
      return manifestPage(request, reply, { text: JSON.stringify(parsed, null, 2), result, status: 400 });
    }
  });

  // The activity.
  app.get('/console/apps/:appId/activity', hide, async (request, reply) => {
    const session = ctx.session(request);
    const id = appId(request);
    const query = request.query as Record<string, string | undefined>;
    const outcome = OUTCOMES.find((o) => o === query.outcome);
    const event = query.event && /^[A-Za-z0-9._-]{1,64}$/.test(query.event) ? query.event : undefined;
    const day = (value: string | undefined) => (value && /^\d{4}-\d{2}-\d{2}$/.test(value) && !Number.isNaN(Date.parse(value)) ? new Date(`${value}T00:00:00Z`) : undefined);
    const from = day(query.from);
    const toDay = day(query.to);
    const to = toDay ? new Date(toDay.getTime() + 86_400_000) : undefined;
    const pageNo = Math.max(0, Math.min(1000, Number.parseInt(query.page ?? '0', 10) || 0));
    const view = await appView(session.principal, id);
    const listed = await apps.activity(session.principal, id, 50, pageNo, { outcome, event, from, to });
    const keep = new URLSearchParams(Object.entries({ outcome, event, from: query.from && from ? query.from : undefined, to: query.to && toDay ? query.to : undefined }).filter((e): e is [string, string] => e[1] !== undefined));
    return ctx.send(
      reply,
      request,
      `${view.name}: activity`,
      html`<p><a href="/console/apps/${id}">Back to ${view.name}</a> · <a href="/console/apps/${id}/activity.csv" download>Download all as CSV</a></p>
<form method="get" action="/console/apps/${id}/activity" aria-label="Filter">
<label for="outcome">Outcome</label>
<select id="outcome" name="outcome"><option value="">Any</option>${OUTCOMES.map((o) => html`<option value="${o}"${o === outcome ? html` selected` : ''}>${o}</option>`)}</select>
<label for="event">Kind of call</label>
<input id="event" name="event" placeholder="invocation, ping, payment.completed" value="${event ?? ''}">
<label for="from">From (day, UTC)</label><input id="from" name="from" type="date" value="${from ? query.from : ''}">
<label for="to">To (day, UTC, included)</label><input id="to" name="to" type="date" value="${toDay ? query.to : ''}">
<button type="submit">Filter</button>
</form>
<p>${listed.totalItems} ${listed.totalItems === 1 ? 'call' : 'calls'}${listed.totalPages > 1 ? `, page ${pageNo + 1} of ${listed.totalPages}` : ''}.</p>
<table><thead><tr><th scope="col">When</th><th scope="col">Kind</th><th scope="col">Outcome</th><th scope="col">Status</th><th scope="col">ms</th><th scope="col">What broke</th></tr></thead><tbody>
${listed.items.map((row) => html`<tr data-activity="${row.id}"><td><a href="/console/apps/${id}/activity/${row.id}">${time(row.createdAt)}</a></td><td>${row.event}${row.test ? html` <strong class="test-mode">test</strong>` : ''}</td><td>${row.outcome}</td><td>${row.status ?? '—'}</td><td>${row.ms}</td><td>${whatBroke(row)}</td></tr>`)}
</tbody></table>
${pageNo > 0 ? html`<a href="/console/apps/${id}/activity?${keep.toString()}&page=${pageNo - 1}">Newer</a> ` : ''}${pageNo + 1 < listed.totalPages ? html`<a href="/console/apps/${id}/activity?${keep.toString()}&page=${pageNo + 1}">Older</a>` : ''}`,
    );
  });

  app.get('/console/apps/:appId/activity/:activityId', hide, async (request, reply) => {
    const session = ctx.session(request);
    const id = appId(request);
    const row = await apps.activityRow(session.principal, id, activityId(request));
    const replayable = row.event.startsWith('payment.') && row.outcome !== 'OK';
    return ctx.send(
      reply,
      request,
      `Call ${row.deliveryId}`,
      html`<p><a href="/console/apps/${id}/activity">Back to the activity</a></p>
<dl class="facts">
<dt>When</dt><dd>${time(row.createdAt)}</dd><dt>Kind</dt><dd>${row.event}${row.test ? html` (a <strong class="test-mode">test</strong> payment: no money moved)` : ''}</dd><dt>Delivery id</dt><dd><code>${row.deliveryId}</code> (X-Service-Delivery)</dd>
<dt>Outcome</dt><dd>${row.outcome}</dd><dt>Reply status</dt><dd>${row.status ?? 'no reply'}</dd><dt>Time</dt><dd>${row.ms} ms</dd>
<dt>Request</dt><dd>${row.requestBytes} bytes</dd><dt>Reply</dt><dd>${row.replyBytes} bytes</dd>
<dt>Failure</dt><dd>${row.failure ?? '—'}</dd><dt>What broke</dt><dd>${row.detail ?? '—'}</dd><dt>App error code</dt><dd>${row.appErrorCode ?? '—'}</dd>
</dl>
<h2>Request</h2>
<p class="hint">POST to the webhook URL with X-Service-App, X-Service-Delivery, X-Service-Timestamp and X-Service-Signature; the body:</p>
<pre data-request>${pretty(row.request)}</pre>
<h2>Reply</h2>
<pre data-reply-body>${row.reply === null ? 'No reply came.' : pretty(row.reply)}</pre>
${replayable ? html`<form method="post" action="/console/apps/${id}/activity/${row.id}/replay">${csrfField(session.csrf)}<button type="submit">Send this payment event again</button></form>` : ''}`,
    );
  });

  app.post('/console/apps/:appId/activity/:activityId/replay', hide, async (request, reply) => {
    const id = appId(request);
    await apps.replay(ctx.session(request).principal, id, activityId(request));
    return ctx.send(reply, request, 'Sent again', html`${notice('Queued: the event goes out again with its original delivery id, so your server can tell it from a new one.')}<p><a href="/console/apps/${id}/activity">Back to the activity</a></p>`);
  });

  app.get('/console/apps/:appId/activity.csv', hide, async (request, reply) => {
    const id = appId(request);
    const rows = await apps.activityCsv(ctx.session(request).principal, id);
    reply.type('text/csv; charset=utf-8').header('content-disposition', `attachment; filename="activity-${id}.csv"`);
    return reply.send(Readable.from(rows));
  });

  // The test console: the owner calls the app with no room, as a tester, and sees the call and the reply.
  const testPage = async (request: FastifyRequest, reply: FastifyReply, state: { command?: string; values?: string; result?: Html; next?: { invocationId: string; step: string; title: string }; status?: number } = {}) => {
    const session = ctx.session(request);
    const id = appId(request);
    const view = await appView(session.principal, id);
    const commands = view.manifestVersion ? commandsOf(await apps.manifestText(session.principal, id, view.manifestVersion)) : [];
    return ctx.send(
      reply,
      request,
      `${view.name}: test console`,
      html`<p><a href="/console/apps/${id}">Back to ${view.name}</a></p>
${state.result ?? ''}
${state.next
  ? html`<form method="post" action="/console/apps/${id}/test">${csrfField(session.csrf)}
<h2>Next step: ${state.next.title}</h2>
<input type="hidden" name="command" value="${state.command ?? ''}"><input type="hidden" name="invocationId" value="${state.next.invocationId}"><input type="hidden" name="step" value="${state.next.step}">
<label for="step-values">Answers to this step (JSON object by input id)</label>
<textarea id="step-values" name="values" rows="4"></textarea>
<button type="submit">Answer this step</button>
</form>`
  : ''}
${commands.length === 0
  ? html`<p>Upload a manifest with a command first.</p>`
  : html`<form method="post" action="/console/apps/${id}/test">${csrfField(session.csrf)}
<label for="command">Command</label>
<select id="command" name="command">${commands.map((c) => html`<option value="${c}"${c === state.command ? html` selected` : ''}>${c}</option>`)}</select>
<label for="first-step">First view (a dynamic flow's; empty otherwise)</label>
<input id="first-step" name="step">
<label for="values">Answers (JSON object by input id; empty for none)</label>
<textarea id="values" name="values" rows="4">${state.values ?? ''}</textarea>
<button type="submit">Run as the tester</button>
</form>`}`,
      state.status,
    );
  };

  app.get('/console/apps/:appId/test', hide, async (request, reply) => testPage(request, reply));

  app.post('/console/apps/:appId/test', hide, async (request, reply) => {
    const session = ctx.session(request);
    const id = appId(request);
    const command = field(request, 'command');
    const valuesText = field(request, 'values');
    // A dynamic flow's later step: the invocation and the view the answers come from.
    const invocationId = field(request, 'invocationId');
    const step = field(request, 'step');
    const continuing = { ...(invocationId !== '' && ID.test(invocationId) ? { invocationId } : {}), ...(step !== '' && ID.test(step) ? { step } : {}) };
    let values: Record<string, unknown> | undefined;
    if (valuesText !== '') {
      try {
        values = JSON.parse(valuesText) as Record<string, unknown>;
      } catch {
        values = undefined;
      }
      if (values === undefined || typeof values !== 'object' || values === null || Array.isArray(values)) {
        return testPage(request, reply, { command, values: valuesText, result: problem('The answers must be a JSON object, e.g. {"size": "l"}: fix them and run again.'), status: 400 });
      }
    }
    let result;
    try {
      result = await services.appInvocations.invoke(session.principal, id, { command, ...continuing, ...(values ? { values } : {}) }, { ip: request.ip, testConsole: true });
    } catch (error) {
      return testPage(request, reply, { command, values: valuesText, result: problem(`Not sent: ${refusal(error, ['APP_NOT_FOUND']).message}`), status: 400 });
    }
    const call = (await apps.activity(session.principal, id, 1, 0)).items[0];
    return testPage(request, reply, {
      command,
      values: valuesText,
      ...(result.outcome === 'view' && result.view ? { next: { invocationId: result.invocationId, step: result.view.id, title: result.view.title } } : {}),
      result: html`<section aria-labelledby="result-h"><h2 id="result-h">Reply: ${result.outcome}</h2>
${call ? html`<p>The call: <a href="/console/apps/${id}/activity/${call.id}">${call.event} ${call.deliveryId}</a>, ${call.outcome}, ${call.ms} ms${call.outcome === 'OK' ? '' : `, ${whatBroke(call)}`}.</p>` : ''}
<pre data-reply>${JSON.stringify(result, null, 2)}</pre></section>`,
    });
  });
}

/** A body as kept, indented when it is whole JSON. */
function pretty(text: string | null): string {
  if (text === null) return '(not kept for this call)';
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

/** The command ids of a manifest's text. */
function commandsOf(text: string): string[] {
  const manifest = JSON.parse(text) as { commands?: { id?: unknown }[] };
  return (manifest.commands ?? []).map((c) => c.id).filter((id): id is string => typeof id === 'string');
}
