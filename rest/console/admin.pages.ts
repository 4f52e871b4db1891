import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { WebSession } from '../../src/auth/index.js';
import { CommonErrors } from '../../src/platform/common.errors.js';
import { MODERATION_ACTIONS, REPORT_TARGETS } from '../../src/moderation/moderation.schemas.js';
import { html, type Html } from './html.js';
import { csrfField, notice, problem } from './layout.js';
import { field, ID, refusal, type ConsoleContext } from './context.js';


const ACTION_LABELS: Record<(typeof MODERATION_ACTIONS)[number], string> = {
  DISMISS: 'Dismiss the reports',
  REMOVE_MESSAGE: 'Remove the message',
  SUSPEND_USER: 'Suspend the user',
  UNLIST_APP: 'Take the app out of the directory',
};

/**
 * The site administrators' pages: wallet limit requests, app reply-time grants, the moderation queue
 * and the audit log. A member who is not an administrator gets the answer a missing page gets.
 */
export function adminPages(app: FastifyInstance, ctx: ConsoleContext): void {
  const { services } = ctx;
  const hide = { schema: { hide: true } };

  const admin = async (request: FastifyRequest): Promise<WebSession> => {
    const session = ctx.session(request);
    if (!(await services.users.isSiteAdmin(session.principal.userId))) throw CommonErrors.NOT_FOUND({ message: 'No such page' });
    return session;
  };

  const adminPage = async (request: FastifyRequest, reply: FastifyReply, top: Html = html``, status = 200) => {
    const session = await admin(request);
    const { principal } = session;
    const csrf = csrfField(session.csrf);
    const [requests, queue, audit] = await Promise.all([
      services.walletLimits.listForAdmin(principal, 'OPEN', 50, 0),
      services.moderation.queue(principal, 20, 0),
      services.moderation.audit(principal, 20, 0),
    ]);
    return ctx.send(
      reply,
      request,
      'Administration',
      html`${top}
<section aria-labelledby="limits-h"><h2 id="limits-h">Wallet limit requests</h2>
${requests.items.length === 0
  ? html`<p>No open requests.</p>`
  : html`<table><thead><tr><th scope="col">Member</th><th scope="col">Asked for</th><th scope="col">For</th><th scope="col">Why</th><th scope="col">Decide</th></tr></thead><tbody>
${requests.items.map(
  (r) => html`<tr data-limit-request="${r.id}"><td><code>${r.userId}</code></td><td>${r.noLimit ? 'no limit' : (r.tier ?? '—')}</td><td>${r.duration}</td><td>${r.reason ?? '—'}</td>
<td><form method="post" action="/console/admin/limit-requests/${r.id}/approve" class="inline">${csrf}<button type="submit" aria-label="Approve the request of ${r.userId}">Approve</button></form>
<form method="post" action="/console/admin/limit-requests/${r.id}/refuse" class="inline">${csrf}<button type="submit" class="danger" aria-label="Refuse the request of ${r.userId}">Refuse</button></form></td></tr>`,
)}</tbody></table>`}
</section>
<section aria-labelledby="reply-h"><h2 id="reply-h">App reply time</h2>
<form method="post" action="/console/admin/reply-time">${csrf}
<label for="appId">App id</label><input id="appId" name="appId" required>
<label for="seconds">Seconds the app may take to reply (1 to 120; 5 by default)</label><input id="seconds" name="seconds" type="number" min="1" max="120" required>
<button type="submit">Grant</button>
</form></section>
<section aria-labelledby="queue-h"><h2 id="queue-h">Moderation queue</h2>
${queue.items.length === 0
  ? html`<p>Nothing reported.</p>`
  : queue.items.map(
      (target) => html`<article data-reported="${target.targetId}"><h3>${target.targetType} <code>${target.targetId}</code>: ${target.openReports} open ${target.openReports === 1 ? 'report' : 'reports'}</h3>
<ul>${target.reports.map((r) => html`<li>${r.reason}${r.comment ? html`: ${r.comment}` : ''}${r.decryptedText ? html` (text given by the reporter, not verified: ${r.decryptedText})` : ''}</li>`)}</ul>
<form method="post" action="/console/admin/reports/actions">${csrf}
<input type="hidden" name="targetType" value="${target.targetType}"><input type="hidden" name="targetId" value="${target.targetId}">
<label for="action-${target.targetId}">Action</label>
<select id="action-${target.targetId}" name="action">${MODERATION_ACTIONS.map((a) => html`<option value="${a}">${ACTION_LABELS[a]}</option>`)}</select>
<label for="reason-${target.targetId}">Reason (kept in the audit log)</label><input id="reason-${target.targetId}" name="reason" required maxlength="500">
<button type="submit">Act</button>
</form></article>`,
    )}
</section>
<section aria-labelledby="audit-h"><h2 id="audit-h">Audit log</h2>
<table><thead><tr><th scope="col">When</th><th scope="col">Administrator</th><th scope="col">Action</th><th scope="col">Target</th><th scope="col">Reason</th></tr></thead><tbody>
${audit.items.map((e) => html`<tr><td>${e.at}</td><td><code>${e.adminId}</code></td><td>${e.action}</td><td>${e.targetType} <code>${e.targetId}</code></td><td>${e.reason}</td></tr>`)}
</tbody></table></section>`,
      status,
    );
  };

  app.get('/console/admin', hide, async (request, reply) => adminPage(request, reply));

  for (const decision of ['approve', 'refuse'] as const) {
    app.post(`/console/admin/limit-requests/:requestId/${decision}`, hide, async (request, reply) => {
      const session = await admin(request);
      const { requestId } = request.params as { requestId: string };
      if (!ID.test(requestId)) throw CommonErrors.NOT_FOUND({ message: 'No such request' });
      try {
        const decided = await services.walletLimits.decide(session.principal, requestId, decision === 'approve');
        return adminPage(request, reply, notice(`The request of ${decided.userId} is ${decided.status.toLowerCase()}.`));
      } catch (error) {
        return adminPage(request, reply, problem(`${refusal(error).message}.`), 400);
      }
    });
  }

  app.post('/console/admin/reply-time', hide, async (request, reply) => {
    const session = await admin(request);
    const appId = field(request, 'appId');
    const seconds = Number(field(request, 'seconds'));
    if (!ID.test(appId)) return adminPage(request, reply, problem('Give the app\'s id (from its owner or the directory).'), 400);
    if (!Number.isInteger(seconds) || seconds < 1 || seconds > 120) return adminPage(request, reply, problem('The reply time is a whole number of seconds from 1 to 120.'), 400);
    try {
      const granted = await services.apps.grantReplyTime(session.principal, appId, seconds);
      return adminPage(request, reply, notice(`${granted.name} may now take ${granted.replyTimeoutSeconds} s to reply.`));
    } catch (error) {
      return adminPage(request, reply, problem(`${refusal(error).message}: check the app id.`), 400);
    }
  });

  app.post('/console/admin/reports/actions', hide, async (request, reply) => {
    const session = await admin(request);
    const targetType = REPORT_TARGETS.find((t) => t === field(request, 'targetType'));
    const action = MODERATION_ACTIONS.find((a) => a === field(request, 'action'));
    const targetId = field(request, 'targetId');
    const reason = field(request, 'reason');
    if (!targetType || !action || !ID.test(targetId)) return adminPage(request, reply, problem('Choose an action from the list for a reported item.'), 400);
    if (reason.length < 1 || reason.length > 500) return adminPage(request, reply, problem('Say why in 1 to 500 characters: it is kept in the audit log.'), 400);
    try {
      const outcome = await services.moderation.act(session.principal, { targetType, targetId, action, reason });
      return adminPage(request, reply, notice(`Done: ${outcome.decidedReports} ${outcome.decidedReports === 1 ? 'report' : 'reports'} decided.`));
    } catch (error) {
      return adminPage(request, reply, problem(`${refusal(error).message}.`), 400);
    }
  });
}
