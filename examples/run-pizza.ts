// `npm run example:pizza`: the pizza shop (examples/pizza-app.ts) against a running service (`npm start`),
// in one command. It signs in as the shop's owner with the texted code (from the development SMS
// outbox), makes the app, uploads its manifest, lists it in the directory, opens a public group with
// the app in it, and serves the app's webhook until Ctrl-C. Settings: SERVICE_URL
// (http://127.0.0.1:8080), SMS_OUTBOX_FILE (.data/sms-outbox.jsonl), PHONE (+14155550142), PORT (free).
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { pizzaManifest, startPizzaApp } from './pizza-app.js';

const service = process.env.SERVICE_URL ?? 'http://127.0.0.1:8080';
const outbox = process.env.SMS_OUTBOX_FILE ?? path.resolve('.data', 'sms-outbox.jsonl');
const phone = process.env.PHONE ?? '+14155550142';

async function call<T>(method: string, url: string, token: string | null, body?: unknown): Promise<T> {
  const response = await fetch(`${service}${url}`, {
    method,
    headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${url} answered ${response.status}: ${text}`);
  // Cast: each call below names the record its route answers.
  return (text ? JSON.parse(text) : undefined) as T;
}

/** The newest code texted to the phone (the development SMS provider writes one JSON line per text). */
async function lastCode(): Promise<string> {
  for (let tries = 0; tries < 50; tries++) {
    const lines = (await readFile(outbox, 'utf8').catch(() => '')).trim().split('\n').filter(Boolean);
    // Cast: the outbox's lines are the SMS provider's records.
    const mine = lines.map((line) => JSON.parse(line) as { to: string; code?: string }).filter((line) => line.to === phone && line.code);
    const code = mine.at(-1)?.code;
    if (code) return code;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`no code texted to ${phone} in ${outbox}`);
}

await call('POST', '/api/auth/code', null, { phone });
const session = await call<{ accessToken: string }>('POST', '/api/auth/login', null, { phone, code: await lastCode(), device: { name: 'Pizza shop', platform: 'WEB' } });
const token = session.accessToken;
let secret = '';
const shop = await startPizzaApp({ secrets: () => [secret] });
const created = await call<{ id: string; webhookSecret: string }>('POST', '/api/apps', token, { name: 'Pizza shop', webhookUrl: shop.url });
secret = created.webhookSecret;
await call('PUT', `/api/apps/${created.id}/manifest`, token, pizzaManifest);
await call('PATCH', `/api/apps/${created.id}`, token, { public: true });
const room = await call<{ id: string }>('POST', '/api/rooms', token, { type: 'PUBLIC_GROUP', name: `Pizza corner ${created.id.slice(0, 6)}` });
await call('POST', `/api/rooms/${room.id}/apps/${created.id}`, token);
// One line a script can read, then what a person does next.
process.stdout.write(`${JSON.stringify({ ready: true, appId: created.id, roomId: room.id, webhook: shop.url })}\n`);
process.stdout.write(`The pizza shop is open: join the group ${room.id} and invoke ${created.id} (POST /api/apps/${created.id}/invocations {roomId, command: "menu"}). Ctrl-C closes it.\n`);
const close = () => void shop.close().then(() => process.exit(0));
process.once('SIGINT', close);
process.once('SIGTERM', close);
