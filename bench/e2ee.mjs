// `npm run bench:e2ee`: the key directory under a room of MEMBERS members with DEVICES devices each
// (every one with identity keys): the latency of a `create` upload carrying a share for every device
// (300 by default), ITERATIONS times (each a new key version), then of a key request fanned out to
// every other device's inbox, from ITERATIONS different devices. Requests go one at a time over HTTP to
// a real api process; shares are signed beforehand, so the figures are the server's.
import { generateKeyPairSync, randomBytes, randomUUID, sign } from 'node:crypto';
import http from 'node:http';
import { TokenService } from '../dist/src/auth/tokens.js';
import { insertDevices, percentile, requestJson, spawnRole, stopAll, startBench } from './common.mjs';

const MEMBERS = Number(process.env.MEMBERS ?? 100);
const DEVICES = Number(process.env.DEVICES ?? 3);
const ITERATIONS = Number(process.env.ITERATIONS ?? 30);

const { tmp, stack, env, config, ctx, children, port } = await startBench('e2ee', { E2EE_KEY_CALLS_PER_MINUTE: '100000' });
const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
const call = (method, url, token, body) => requestJson({ port, agent }, method, url, token, body);
const b64 = (key) => key.export({ format: 'der', type: 'spki' }).subarray(-32).toString('base64');

/** The members, their devices with identity keys, and the room they are all active members of. */
async function seed() {
  const db = ctx.platform.db;
  const at = new Date();
  const tokens = new TokenService(config.JWT_SECRET, 6 * 3600, 300);
  const users = Array.from({ length: MEMBERS }, (_, i) => ({ userId: `eu${i}` }));
  await db.collection('users').insertMany(users.map((u, i) => ({ _id: u.userId, phone: `+1888${String(i).padStart(7, '0')}`, displayName: null, language: 'en', twoFactor: { enabled: false, secret: null, pendingSecret: null, lastStep: 0 }, createdAt: at, updatedAt: at })));
  const devices = [];
  for (const u of users) for (let d = 0; d < DEVICES; d++) devices.push({ userId: u.userId, deviceId: `${u.userId}-d${d}`, signing: generateKeyPairSync('ed25519') });
  await insertDevices(db, devices.map((d) => ({ _id: d.deviceId, userId: d.userId, name: 'bench', platform: 'OTHER', createdAt: at, lastSeenAt: at, revokedAt: null, refreshTokenHash: randomUUID(), refreshExpiresAt: at, spentRefreshHashes: [], pushToken: null, voipPushToken: null })));
  await ctx.repos.e2ee.identities.insertMany(
    devices.map((d) => ({ _id: d.deviceId, userId: d.userId, encryptionKey: b64(generateKeyPairSync('x25519').publicKey), signingKey: b64(d.signing.publicKey), proof: 'seeded', revoked: false, createdAt: at })),
  );
  for (const d of devices) d.token = await tokens.signAccess({ userId: d.userId, deviceId: d.deviceId });
  const room = await ctx.services.rooms.create({ userId: users[0].userId, deviceId: devices[0].deviceId }, { type: 'E2EE', name: 'bench room' });
  for (const u of users.slice(1)) await ctx.repos.roomMembers.add(room.id, u.userId, at);
  return { devices, roomId: room.id };
}

/** One `create` upload body per version, signed by the uploader for every device. */
function createBodies(devices, roomId, uploader) {
  return Array.from({ length: ITERATIONS }, (_, i) => {
    const version = i + 1;
    const shares = devices.map((d) => {
      const wrappedKey = randomBytes(80).toString('base64');
      const signature = sign(null, Buffer.from(`E2EE_SHARE_V1|${roomId}|${version}|${d.deviceId}|${wrappedKey}`), uploader.signing.privateKey).toString('base64');
      return { deviceId: d.deviceId, wrappedKey, signature };
    });
    return { version, create: true, shares };
  });
}

async function timed(fn) {
  const started = performance.now();
  await fn();
  return performance.now() - started;
}

try {
  const { devices, roomId } = await seed();
  const uploader = devices[0];
  const bodies = createBodies(devices, roomId, uploader);
  await spawnRole('api', env, children);

  const uploads = [];
  for (const body of bodies) {
    uploads.push(
      await timed(async () => {
        const res = await call('POST', `/api/e2ee/rooms/${roomId}/keys`, uploader.token, body);
        if (res.status !== 204) throw new Error(`the upload answered ${res.status}: ${res.body.slice(0, 300)}`);
      }),
    );
  }
  const requests = [];
  for (const asking of devices.slice(1, 1 + ITERATIONS)) {
    requests.push(
      await timed(async () => {
        const res = await call('POST', `/api/e2ee/rooms/${roomId}/keys/request`, asking.token, { version: 1 });
        if (res.status !== 204) throw new Error(`the key request answered ${res.status}: ${res.body.slice(0, 300)}`);
      }),
    );
  }
  const inbox = await ctx.services.inbox.readAfter(devices.at(-1).deviceId, 0, 1000);
  const delivered = inbox.filter((entry) => entry.event === 'e2ee.key-requested').length;
  if (delivered !== requests.length) throw new Error(`the last device's inbox holds ${delivered} key requests, expected ${requests.length}`);
  const line = (name, values) => {
    const sorted = [...values].sort((a, b) => a - b);
    console.log(`  ${name}: p50 ${percentile(sorted, 50).toFixed(1)} ms, p99 ${percentile(sorted, 99).toFixed(1)} ms (${sorted.length} calls, one at a time)`);
  };
  console.log(`room of ${MEMBERS} members with ${DEVICES} devices each (${devices.length} devices), one api process, mongo-java-server (memory):`);
  line(`create upload with ${devices.length} shares`, uploads);
  line(`key request fanned out to ${devices.length - 1} inboxes`, requests);
} finally {
  agent.destroy();
  await stopAll(children, stack, tmp, ctx);
}
