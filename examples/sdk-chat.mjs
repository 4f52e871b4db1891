// Two people chat through the client library (@chat-platform/client), installed from its tarball:
//
//   npm run client:pack -- /tmp/chat && cd /tmp/chat && npm init -y && npm install ./chat-platform-client-1.0.99.tgz
//   SMS_OUTBOX_FILE=/path/to/.data/sms-outbox.jsonl node /path/to/examples/sdk-chat.mjs
//
// BASE_URL is the REST api and SOCKET_URL the socket hub (under `npm start`, the defaults: 8080 and
// 8081; behind the production front both are the service's one address).
// Both sign in with the code the development SMS provider wrote to SMS_OUTBOX_FILE, Ada invites Grace
// into a room (Grace accepts on the `room.invitation` device event), and they exchange messages both
// ways. Prints `delivered` when every message arrived exactly once on the other side, in order.
import { readFile } from 'node:fs/promises';
import { createChatClient, ok } from '@chat-platform/client';

const baseUrl = process.env.BASE_URL ?? 'http://127.0.0.1:8080';
const socketUrl = process.env.SOCKET_URL ?? 'http://127.0.0.1:8081';
const outbox = process.env.SMS_OUTBOX_FILE;
if (!outbox) throw new Error('SMS_OUTBOX_FILE names the development SMS outbox (the service writes each code there)');
const MESSAGES = Number(process.env.MESSAGES ?? 5);

/** The newest code texted to `phone`, from the outbox's complete lines. */
async function codeFor(phone, since) {
  for (const deadline = Date.now() + 10_000; Date.now() < deadline; await new Promise((resolve) => setTimeout(resolve, 100))) {
    const text = await readFile(outbox, 'utf8').catch(() => '');
    const lines = text.slice(0, text.lastIndexOf('\n') + 1).split('\n').filter(Boolean).map((line) => JSON.parse(line));
    const sent = lines.filter((line) => line.to === phone && Date.parse(line.at) >= since).at(-1);
    if (sent) return sent.code;
  }
  throw new Error(`no code for ${phone} in ${outbox}`);
}

async function person(name) {
  const phone = `+49151${Math.floor(10_000_000 + Math.random() * 89_999_999)}`;
  const client = await createChatClient({ baseUrl, socketUrl, device: { name: `${name}'s phone`, platform: 'OTHER' } });
  const since = Date.now() - 1_000;
  await client.requestCode(phone);
  if ((await client.signIn(phone, await codeFor(phone, since))) !== 'signed-in') throw new Error(`${name} has two-factor on`);
  await client.api.PATCH('/api/users/me', { body: { displayName: name } });
  const received = [];
  client.on('message.new', (message) => {
    if (message.userId !== client.userId) received.push(message.message);
  });
  client.connect();
  await until(() => client.state === 'connected', `${name} connected`);
  return { name, client, received };
}

async function until(check, what, ms = 15_000) {
  for (const deadline = Date.now() + ms; !check(); await new Promise((resolve) => setTimeout(resolve, 20))) {
    if (Date.now() > deadline) throw new Error(`timed out: ${what}`);
  }
}

const [ada, grace] = await Promise.all([person('Ada'), person('Grace')]);
// Grace accepts the invitation when its device event arrives.
const invited = new Promise((resolve) =>
  grace.client.on('room.invitation', async ({ data }) => {
    await grace.client.api.POST('/api/rooms/{roomId}/invitation', { params: { path: { roomId: data.roomId }, query: { accept: true } } });
    resolve(data.roomId);
  }),
);
const room = await ok(ada.client.api.POST('/api/rooms', { body: { type: 'PRIVATE_GROUP', name: 'Ada and Grace', memberIds: [grace.client.userId] } }));
const roomId = await invited;
await Promise.all([ada.client.openRoom(room.id), grace.client.openRoom(roomId)]);
// Grace's socket joined the room when she accepted; her hub subscribes to it within a moment.
await new Promise((resolve) => setTimeout(resolve, 200));

const sent = { Ada: [], Grace: [] };
for (let i = 1; i <= MESSAGES; i++) {
  for (const { name, client } of [ada, grace]) {
    const text = `${name} #${i}`;
    sent[name].push(text);
    await client.send(room.id, text).messageId;
  }
}
await until(() => ada.received.length >= MESSAGES && grace.received.length >= MESSAGES, 'every message arrived');
await new Promise((resolve) => setTimeout(resolve, 300));
const exact = JSON.stringify(grace.received) === JSON.stringify(sent.Ada) && JSON.stringify(ada.received) === JSON.stringify(sent.Grace);
await Promise.all([ada.client.signOut(), grace.client.signOut()]);
if (!exact) {
  console.error(JSON.stringify({ sent, adaReceived: ada.received, graceReceived: grace.received }));
  process.exit(1);
}
console.log('delivered');
