import { html, type Html } from './html.js';

/** What every page's frame needs: the environment badge, who is signed in, the session's form token. */
export interface Frame {
  environment: string;
  signedIn: { userId: string; admin: boolean; csrf: string } | null;
}

/** The page frame: skip link, header with the environment and sign-out, main content. */
export function page(frame: Frame, title: string, body: Html | Html[]): Html {
  const who = frame.signedIn;
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · Console</title>
<link rel="stylesheet" href="/console/static/console.css">
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header>
  <a class="brand" href="/console">Console</a>
  <span class="env env-${frame.environment}" title="The environment this console runs in">${frame.environment}</span>
  ${who
    ? html`<nav aria-label="Main"><a href="/console">My apps</a>${who.admin ? html` <a href="/console/admin">Administration</a>` : ''}</nav>
  <form method="post" action="/console/sign-out" class="inline">${csrfField(who.csrf)}<button type="submit">Sign out</button></form>`
    : ''}
</header>
<main id="main">
<h1>${title}</h1>
${body}
</main>
</body>
</html>`;
}

export function csrfField(token: string): Html {
  return html`<input type="hidden" name="_csrf" value="${token}">`;
}

/** An error box at the top of a form: what went wrong and what to do. */
export function problem(message: string | null | undefined): Html {
  return message ? html`<p class="problem" role="alert">${message}</p>` : html``;
}

export function notice(message: string | null | undefined): Html {
  return message ? html`<p class="notice" role="status">${message}</p>` : html``;
}

/** A secret shown this once, with what to do with it. */
export function shownOnce(label: string, secret: string): Html {
  return html`<section class="secret" aria-labelledby="secret-label">
<h2 id="secret-label">${label}</h2>
<p>Copy it now: it is shown this once and cannot be shown again (only a hash or a sealed copy is kept).</p>
<p><code class="secret-value" data-secret>${secret}</code></p>
</section>`;
}

export const CSS = `
:root { color-scheme: light dark; --fg: #1b1f24; --bg: #fff; --muted: #5b6470; --line: #d0d7de; --accent: #0b57d0; --bad: #b3261e; --ok: #146c2e; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6edf3; --bg: #0d1117; --muted: #9aa4af; --line: #30363d; --accent: #7aa7ff; --bad: #ff8a80; --ok: #7ee787; } }
* { box-sizing: border-box; }
body { margin: 0; font: 16px/1.5 system-ui, sans-serif; color: var(--fg); background: var(--bg); }
.skip { position: absolute; left: -999px; } .skip:focus { left: 8px; top: 8px; background: var(--bg); padding: 4px; }
header { display: flex; flex-wrap: wrap; gap: 12px; align-items: center; padding: 8px 16px; border-bottom: 1px solid var(--line); }
header nav { display: flex; gap: 12px; flex: 1; }
.brand { font-weight: 700; text-decoration: none; color: var(--fg); }
.env { font-size: 12px; padding: 2px 8px; border-radius: 10px; border: 1px solid var(--line); text-transform: uppercase; }
.env-production { background: var(--bad); color: #fff; border-color: var(--bad); }
main { max-width: 960px; margin: 0 auto; padding: 16px; }
a { color: var(--accent); }
a:focus, button:focus, input:focus, select:focus, textarea:focus { outline: 3px solid var(--accent); outline-offset: 2px; }
label { display: block; font-weight: 600; margin-top: 12px; }
.hint { color: var(--muted); font-size: 14px; margin: 2px 0; }
input, select, textarea { font: inherit; padding: 6px 8px; border: 1px solid var(--line); border-radius: 6px; background: var(--bg); color: var(--fg); width: 100%; max-width: 480px; }
textarea { max-width: 100%; font-family: ui-monospace, monospace; font-size: 14px; }
button { font: inherit; padding: 6px 14px; margin-top: 12px; border-radius: 6px; border: 1px solid var(--accent); background: var(--accent); color: #fff; cursor: pointer; }
button.secondary { background: transparent; color: var(--accent); }
button.danger { background: var(--bad); border-color: var(--bad); }
form.inline { display: inline; } form.inline button { margin-top: 0; }
table { border-collapse: collapse; width: 100%; display: block; overflow-x: auto; }
th, td { text-align: left; padding: 6px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
.problem { border-left: 4px solid var(--bad); padding: 8px 12px; background: color-mix(in srgb, var(--bad) 10%, transparent); }
.notice { border-left: 4px solid var(--ok); padding: 8px 12px; background: color-mix(in srgb, var(--ok) 10%, transparent); }
.secret { border: 2px solid var(--accent); padding: 8px 16px; border-radius: 8px; }
.secret-value, code { font-family: ui-monospace, monospace; word-break: break-all; }
.health-UP { color: var(--ok); } .health-DOWN { color: var(--bad); }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(260px, 1fr)); gap: 12px; padding: 0; list-style: none; }
.cards li { border: 1px solid var(--line); border-radius: 8px; padding: 12px; }
ol.source { font-family: ui-monospace, monospace; font-size: 14px; padding-left: 4em; white-space: pre-wrap; }
ol.source li.bad { background: color-mix(in srgb, var(--bad) 15%, transparent); }
ol.source .why { display: block; color: var(--bad); font-family: system-ui, sans-serif; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 4px 16px; } dl.facts dt { font-weight: 600; } dl.facts dd { margin: 0; word-break: break-word; }
pre { white-space: pre-wrap; word-break: break-word; border: 1px solid var(--line); padding: 8px; border-radius: 6px; }
fieldset { border: 1px solid var(--line); border-radius: 8px; margin-top: 16px; }
@media (max-width: 600px) { main { padding: 8px; } dl.facts { grid-template-columns: 1fr; } }
`;
