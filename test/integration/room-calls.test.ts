import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import dgram from 'node:dgram';
import { after, before, describe, it } from 'node:test';
import { startSfuNode, type SfuNode } from '../../src/sfu/sfu-node.js';
import type { Workers } from '../../workers/main.js';
import { bearer, freshPhone, recordedPush, signIn, startTestApp, startTestWorkers, type Session, type TestApp } from '../helpers/app.js';
import { connectAll, httpAs, makeRoom } from '../helpers/factories.js';
import { DeviceClient, spawnHub, type HubProcess } from '../helpers/hubs.js';
import { spawnRole } from '../helpers/processes.js';
import { until } from '../helpers/wait.js';


/** RTP packets arriving on a UDP socket: payload type and SSRC of each (RFC 3550 header). */
async function rtpReceiver() {
  const socket = dgram.createSocket('udp4');
  const packets: { payloadType: number; ssrc: number }[] = [];
  socket.on('message', (msg) => {
    if (msg.length < 12 || msg[0]! >> 6 !== 2) return;
    const payloadType = msg[1]! & 0x7f;
    if (payloadType >= 72 && payloadType <= 76) return; // RTCP sharing the port
    packets.push({ payloadType, ssrc: msg.readUInt32BE(8) });
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  return { port: socket.address().port, packets, close: () => socket.close() };
}

describe('room calls through the SFU', () => {
  let t: TestApp;
  let workers: Workers;
  let sfu: SfuNode;
  const hubs: HubProcess[] = [];
  const clients: DeviceClient[] = [];

  before(async () => {
    t = await startTestApp({ CALL_RING_TIMEOUT: '2', ROOM_CALL_MAX_PARTICIPANTS: '3', SFU_RTC_MIN_PORT: '41000', SFU_RTC_MAX_PORT: '41999' });
    workers = await startTestWorkers(t);
    sfu = await startSfuNode(t.ctx.platform, { port: 0 });
    hubs.push(...(await Promise.all([spawnHub(t.config), spawnHub(t.config)])));
  });
  after(async () => {
    for (const c of clients) c.close();
    await Promise.all(hubs.map((hub) => hub.kill()));
    await sfu.close();
    await workers.close();
    await t.close();
  });

  const api = httpAs(() => t);
  const events = (client: DeviceClient, name: string) => client.received.filter((e) => e.event === name);

  async function socketFor(session: Session, node: number) {
    const client = new DeviceClient(session.accessToken);
    clients.push(client);
    await client.connect(hubs[node % hubs.length]!.port);
    return client;
  }

  /** A private group of the creator and three members; the third member has a second device. */
  async function group(type = 'PRIVATE_GROUP') {
    const owner = await signIn(t, freshPhone(), { name: 'Owner', platform: 'IOS' });
    const b = await signIn(t, freshPhone(), { name: 'B', platform: 'ANDROID' });
    const c = await signIn(t, freshPhone(), { name: 'C', platform: 'IOS' });
    const dPhone = freshPhone();
    const d1 = await signIn(t, dPhone, { name: 'D1', platform: 'IOS' });
    const d2 = await signIn(t, dPhone, { name: 'D2', platform: 'ANDROID' });
    await connectAll(t, owner, [b, c, d1]);
    const room = await api(owner, 'POST', '/api/rooms', { type, name: `Call room ${Date.now()}`, memberIds: [b.userId, c.userId, d1.userId] });
    assert.equal(room.statusCode, 200, room.body);
    return { roomId: room.json().id as string, owner, b, c, d1, d2 };
  }

  it('starts a room call, rings the members, joins across nodes, stops the other devices ringing, leaves and ends', async () => {
    const { roomId, owner, b, c, d1, d2 } = await group();
    const sockets = { owner: await socketFor(owner, 0), b: await socketFor(b, 1), d1: await socketFor(d1, 0), d2: await socketFor(d2, 1) };
    // c has no socket: the ring arrives as a VoIP push.
    const voipToken = `voip-room-${c.deviceId}`;
    await api(c, 'PUT', '/api/devices/voip-push-token', { token: voipToken });

    const started = await api(owner, 'POST', '/api/calls', { roomId, media: 'VIDEO' });
    assert.equal(started.statusCode, 200, started.body);
    const call = started.json();
    assert.equal(call.roomId, roomId);
    assert.equal(call.state, 'ACTIVE');
    assert.deepEqual(call.participants.map((p: { deviceId: string }) => p.deviceId), [owner.deviceId]);
    const callId = call.id as string;

    for (const client of [sockets.b, sockets.d1, sockets.d2]) await client.until((r) => r.some((e) => e.event === 'room-call.incoming'));
    assert.deepEqual(events(sockets.b, 'room-call.incoming')[0]!.data, { callId, roomId, startedBy: owner.userId, media: 'VIDEO' });
    assert.equal(events(sockets.owner, 'room-call.incoming').length, 0, 'the caller does not ring');
    const push = await recordedPush(t, { token: voipToken });
    assert.ok(push, 'an offline member is rung by VoIP push');
    assert.equal(push.message.kind, 'voip');
    assert.equal(push.message.data.event, 'room-call.incoming');
    assert.equal(push.message.data.callId, callId);

    // A second call in the same room is refused and names the one going on.
    const again = await api(b, 'POST', '/api/calls', { roomId, media: 'AUDIO' });
    assert.equal(again.statusCode, 409);
    assert.equal(again.json().code, 'ROOM_CALL_IN_PROGRESS');
    assert.deepEqual(again.json().details, [{ callId }]);
    // Late joiners find it.
    assert.equal((await api(c, 'GET', `/api/rooms/${roomId}/call`)).json().id, callId);

    // b joins; the owner hears of it on another node.
    const joined = await api(b, 'POST', `/api/calls/${callId}/answer`);
    assert.equal(joined.statusCode, 200, joined.body);
    assert.equal(joined.json().participants.length, 2);
    await sockets.owner.until((r) => r.some((e) => e.event === 'room-call.joined' && e.data.deviceId === b.deviceId));

    // d joins on d2: d1 (another node) is told, so it stops ringing.
    assert.equal((await api(d2, 'POST', `/api/calls/${callId}/answer`)).statusCode, 200);
    await sockets.d1.until((r) => r.some((e) => e.event === 'room-call.joined' && e.data.deviceId === d2.deviceId));
    // The room holds three devices: the next one is refused.
    const full = await api(c, 'POST', `/api/calls/${callId}/answer`);
    assert.equal(full.statusCode, 409);
    assert.equal(full.json().code, 'CALL_FULL');
    // A device is in one call at a time: d2 cannot start another one in another room.
    const elsewhere = (await makeRoom(t, d2, { members: [c] })).id;
    const busy = await api(d2, 'POST', '/api/calls', { roomId: elsewhere });
    assert.equal(busy.statusCode, 409);
    assert.equal(busy.json().code, 'DEVICE_BUSY');
    assert.equal((await api(c, 'GET', `/api/rooms/${elsewhere}/call`)).statusCode, 204, 'the refused call left nothing behind');

    // Leaving: the others hear it; the last one out ends the call for every member.
    const left = await api(b, 'POST', `/api/calls/${callId}/end`);
    assert.equal(left.statusCode, 200);
    assert.equal(left.json().state, 'ACTIVE');
    await sockets.owner.until((r) => r.some((e) => e.event === 'room-call.left' && e.data.deviceId === b.deviceId));
    assert.equal((await api(b, 'POST', `/api/calls/${callId}/end`)).json().participants.length, 2, 'leaving twice changes nothing');
    assert.equal((await api(d2, 'POST', `/api/calls/${callId}/end`)).statusCode, 200);
    const ended = await api(owner, 'POST', `/api/calls/${callId}/end`);
    assert.equal(ended.json().state, 'ENDED');
    assert.equal(ended.json().endReason, 'HANGUP');
    await sockets.b.until((r) => r.some((e) => e.event === 'room-call.ended' && e.data.reason === 'HANGUP'));
    assert.equal((await api(c, 'GET', `/api/rooms/${roomId}/call`)).statusCode, 204);
    // The room is free again, and the devices too.
    const next = await api(b, 'POST', '/api/calls', { roomId, media: 'AUDIO' });
    assert.equal(next.statusCode, 200, next.body);
    assert.equal((await api(b, 'POST', `/api/calls/${next.json().id}/end`)).json().endReason, 'HANGUP');
  });

  it('refuses outsiders, disabled members and, in broadcast rooms, everyone but managers', async () => {
    const { roomId, owner, b, c } = await group();
    const outsider = await signIn(t);
    assert.equal((await api(outsider, 'POST', '/api/calls', { roomId })).json().code, 'NOT_A_MEMBER');
    assert.equal((await api(owner, 'POST', `/api/rooms/${roomId}/members/${c.userId}/enabled?enabled=false`)).statusCode, 204);
    assert.equal((await api(c, 'POST', '/api/calls', { roomId })).json().code, 'NOT_A_MEMBER');

    const callId = (await api(owner, 'POST', '/api/calls', { roomId })).json().id as string;
    for (const who of [outsider, c]) {
      const res = await api(who, 'POST', `/api/calls/${callId}/answer`);
      assert.equal(res.statusCode, 400);
      assert.equal(res.json().code, 'CALL_NOT_FOUND');
      assert.equal((await api(who, 'GET', `/api/calls/${callId}`)).json().code, 'CALL_NOT_FOUND');
    }
    // Media endpoints are for devices in the call.
    assert.equal((await api(b, 'GET', `/api/calls/${callId}/media`)).json().code, 'CALL_NOT_IN_CALL');
    assert.equal((await api(owner, 'POST', '/api/calls', { roomId: 'no-such-room' })).json().code, 'ROOM_NOT_FOUND');
    // Exactly one of calleeId and roomId.
    const both = await api(owner, 'POST', '/api/calls', { roomId, calleeId: b.userId });
    assert.equal(both.statusCode, 400);
    assert.equal(both.json().code, 'VALIDATION_FAILED');
    assert.equal((await api(owner, 'POST', '/api/calls', { media: 'AUDIO' })).json().code, 'VALIDATION_FAILED');
    await api(owner, 'POST', `/api/calls/${callId}/end`);

    const broadcast = await group('BROADCAST');
    assert.equal((await api(broadcast.b, 'POST', '/api/calls', { roomId: broadcast.roomId })).json().code, 'CALL_NOT_ALLOWED');
    const fromOwner = await api(broadcast.owner, 'POST', '/api/calls', { roomId: broadcast.roomId });
    assert.equal(fromOwner.statusCode, 200);
    await api(broadcast.owner, 'POST', `/api/calls/${fromOwner.json().id}/end`);
  });

  it('do-not-disturb: a room call rings a quiet member only when a connection calls and they allow it; the open app still hears of it', async () => {
    const { roomId, owner, b, c } = await group();
    const hour = new Date(Date.now() + 3_600_000).toISOString();
    for (const [s, calls] of [[b, false], [c, true]] as const) {
      assert.equal((await api(s, 'PUT', '/api/devices/push-token', { token: `fcm-dnd-${s.deviceId}`, provider: 'FCM' })).statusCode, 204);
      assert.equal((await api(s, 'PUT', '/api/users/me/notifications', { doNotDisturbUntil: hour, callsFromConnections: calls })).statusCode, 200);
    }
    const started = await api(owner, 'POST', '/api/calls', { roomId, media: 'AUDIO' });
    assert.equal(started.statusCode, 200, started.body);
    const ring = (s: Session) => ({ token: `fcm-dnd-${s.deviceId}`, 'message.data.event': 'room-call.incoming' });
    assert.ok(await recordedPush(t, ring(c)), 'a connection rings the member who allows it');
    assert.equal(await recordedPush(t, ring(b), 1_500), null, 'nor rings the member who does not');
    assert.ok((await t.ctx.services.inbox.readAfter(b.deviceId, 0)).some((entry) => entry.event === 'room-call.incoming'), 'the open app still hears of it');
    assert.equal((await api(owner, 'POST', `/api/calls/${started.json().id as string}/end`)).statusCode < 300, true);
  });

  it('declining stops that user ringing; a call nobody joins ends as missed at the ring timeout', async () => {
    const { roomId, owner, b, d1, d2 } = await group();
    const sockets = { owner: await socketFor(owner, 0), b: await socketFor(b, 1), d1: await socketFor(d1, 0), d2: await socketFor(d2, 1) };
    const callId = (await api(owner, 'POST', '/api/calls', { roomId, media: 'AUDIO' })).json().id as string;
    const declined = await api(d1, 'POST', `/api/calls/${callId}/reject`);
    assert.equal(declined.statusCode, 200);
    assert.equal(declined.json().state, 'ACTIVE', 'the call goes on');
    await sockets.d2.until((r) => r.some((e) => e.event === 'room-call.ring-stopped' && e.data.reason === 'DECLINED'));
    assert.equal(events(sockets.b, 'room-call.ring-stopped').length, 0);

    // Two seconds of ringing, then the worker's timeout job ends it.
    await sockets.b.until((r) => r.some((e) => e.event === 'room-call.ended' && e.data.reason === 'MISSED'), 8_000);
    await sockets.owner.until((r) => r.some((e) => e.event === 'room-call.ended'));
    const after = await api(owner, 'GET', `/api/calls/${callId}`);
    assert.equal(after.json().state, 'ENDED');
    assert.equal(after.json().endReason, 'MISSED');
    // Joining an ended call is refused.
    assert.equal((await api(b, 'POST', `/api/calls/${callId}/answer`)).json().code, 'CALL_NOT_ACTIVE');
  });

  it('carries real media: RTP sent by one participant reaches another through the SFU; WebRTC transports are offered', async () => {
    const { roomId, owner, b, c } = await group();
    const sockets = { owner: await socketFor(owner, 0), b: await socketFor(b, 1) };
    const callId = (await api(owner, 'POST', '/api/calls', { roomId, media: 'AUDIO' })).json().id as string;
    assert.equal((await api(b, 'POST', `/api/calls/${callId}/answer`)).statusCode, 200);

    const session = await api(owner, 'GET', `/api/calls/${callId}/media`);
    assert.equal(session.statusCode, 200, session.body);
    const { rtpCapabilities } = session.json();
    assert.ok(rtpCapabilities.codecs.some((codec: { mimeType: string }) => codec.mimeType === 'audio/opus'));
    assert.deepEqual(session.json().producers, []);

    // A phone's WebRTC transport: ICE and DTLS parameters to set up the peer connection with.
    const webrtc = await api(b, 'POST', `/api/calls/${callId}/media/transports`, { direction: 'recv' });
    assert.equal(webrtc.statusCode, 200, webrtc.body);
    assert.equal(webrtc.json().type, 'webrtc');
    assert.ok(webrtc.json().iceParameters.usernameFragment);
    assert.ok(webrtc.json().iceCandidates.length >= 1);
    assert.ok(webrtc.json().dtlsParameters.fingerprints.length >= 1);
    const dtls = { role: 'client', fingerprints: [{ algorithm: 'sha-256', value: webrtc.json().dtlsParameters.fingerprints.find((f: { algorithm: string }) => f.algorithm === 'sha-256').value }] };
    assert.equal((await api(b, 'POST', `/api/calls/${callId}/media/transports/${webrtc.json().id}/connect`, { dtlsParameters: dtls })).statusCode, 204);

    // The owner sends Opus over plain RTP (as a gateway or a recorder would): ffmpeg is the sender.
    const send = await api(owner, 'POST', `/api/calls/${callId}/media/transports`, { direction: 'send', type: 'plain' });
    assert.equal(send.statusCode, 200, send.body);
    const sendTransport = send.json();
    assert.equal(sendTransport.type, 'plain');
    const ssrc = 22_334_455;
    const rtpParameters = { codecs: [{ mimeType: 'audio/opus', payloadType: 111, clockRate: 48_000, channels: 2 }], encodings: [{ ssrc }] };
    // Video in an audio call, and nonsense parameters, are refused with a code.
    assert.equal((await api(owner, 'POST', `/api/calls/${callId}/media/transports/${sendTransport.id}/produce`, { kind: 'video', rtpParameters })).json().code, 'MEDIA_REJECTED');
    const bad = await api(owner, 'POST', `/api/calls/${callId}/media/transports/${sendTransport.id}/produce`, { kind: 'audio', rtpParameters: { codecs: 'nonsense' } });
    assert.equal(bad.statusCode, 400);
    assert.equal(bad.json().code, 'MEDIA_REJECTED');
    const produced = await api(owner, 'POST', `/api/calls/${callId}/media/transports/${sendTransport.id}/produce`, { kind: 'audio', rtpParameters });
    assert.equal(produced.statusCode, 200, produced.body);
    const producerId = produced.json().producerId as string;
    await sockets.b.until((r) => r.some((e) => e.event === 'room-call.media-added' && e.data.producerId === producerId));

    // b receives over plain RTP on a UDP socket of the test's own.
    const receiver = await rtpReceiver();
    try {
      const recv = (await api(b, 'POST', `/api/calls/${callId}/media/transports`, { direction: 'recv', type: 'plain' })).json();
      assert.equal((await api(b, 'POST', `/api/calls/${callId}/media/transports/${recv.id}/connect`, { ip: '127.0.0.1', port: receiver.port })).statusCode, 204);
      // Consuming on someone else's transport, or one's own media, is refused.
      assert.equal((await api(owner, 'POST', `/api/calls/${callId}/media/transports/${recv.id}/consume`, { producerId, rtpCapabilities })).json().code, 'TRANSPORT_NOT_FOUND');
      const consumed = await api(b, 'POST', `/api/calls/${callId}/media/transports/${recv.id}/consume`, { producerId, rtpCapabilities });
      assert.equal(consumed.statusCode, 200, consumed.body);
      const consumer = consumed.json();
      assert.equal(consumer.kind, 'audio');
      assert.equal((await api(b, 'POST', `/api/calls/${callId}/media/consumers/${consumer.consumerId}/resume`)).statusCode, 204);
      assert.equal((await api(c, 'POST', `/api/calls/${callId}/media/consumers/${consumer.consumerId}/resume`)).json().code, 'CALL_NOT_IN_CALL');

      const ffmpeg = spawn('ffmpeg', [
        '-hide_banner', '-loglevel', 'error', '-re', '-f', 'lavfi', '-i', 'sine=frequency=440:duration=3',
        '-c:a', 'libopus', '-ac', '2', '-ar', '48000', '-payload_type', '111', '-ssrc', String(ssrc),
        // RTCP from ffmpeg leaves from a second socket: the SFU takes the sender's address from the
        // first packet (comedia), so the RTCP goes elsewhere (the receiver skips it).
        '-f', 'rtp', `rtp://127.0.0.1:${sendTransport.port}?rtcpport=${receiver.port}`,
      ]);
      const exited = new Promise((resolve) => ffmpeg.on('exit', resolve));
      await exited;
      const expected = consumer.rtpParameters.encodings[0].ssrc as number;
      const forwarded = () => receiver.packets.filter((p) => p.ssrc === expected);
      // The last packets are still on their way through the SFU when ffmpeg exits.
      await until(() => forwarded().length >= 100, 'the SFU to forward the audio', 3_000);
      const fromSfu = forwarded();
      // 3 s of 20 ms Opus frames is 150 packets; allow for start-up.
      assert.ok(fromSfu.length >= 100, `expected the SFU to forward the audio, got ${fromSfu.length} packets`);
      assert.equal(fromSfu[0]!.payloadType, consumer.rtpParameters.codecs[0].payloadType);
      assert.notEqual(expected, ssrc, 'the SFU rewrites the stream for the consumer');

      // The owner leaves: b hears which media closed.
      await api(owner, 'POST', `/api/calls/${callId}/end`);
      await sockets.b.until((r) => r.some((e) => e.event === 'room-call.left' && (e.data.closedProducerIds as string[]).includes(producerId)));
      assert.deepEqual((await api(b, 'GET', `/api/calls/${callId}/media`)).json().producers, []);
    } finally {
      receiver.close();
    }
    await api(b, 'POST', `/api/calls/${callId}/end`);
  });

  /** A call in a new group, answered by a second member (so the 2 s ring timeout cannot end it first). */
  async function answeredCall() {
    const { roomId, owner, b } = await group();
    const socket = await socketFor(b, 0);
    const started = await api(owner, 'POST', '/api/calls', { roomId });
    assert.equal(started.statusCode, 200, started.body);
    const callId = started.json().id as string;
    assert.equal((await api(b, 'POST', `/api/calls/${callId}/answer`)).statusCode, 200);
    return { roomId, owner, b, socket, callId };
  }

  /** Milliseconds from `since` until `socket` is told the call ended as FAILED. */
  async function failedAfter(socket: DeviceClient, callId: string, since: number): Promise<number> {
    await socket.until((r) => r.some((e) => e.event === 'room-call.ended' && e.data.callId === callId && e.data.reason === 'FAILED'), 10_000);
    const ms = Date.now() - since;
    process.stderr.write(`[room calls] told FAILED ${ms} ms after the media went\n`);
    return ms;
  }

  it('a media worker killed mid-call: its calls end FAILED within 5 s, the node starts a new worker, and the next call gets its router there', async () => {
    const { owner, socket, callId } = await answeredCall();
    assert.equal((await api(owner, 'GET', `/api/calls/${callId}/media`)).statusCode, 200, 'the router is on the worker');
    const [pid] = sfu.workerPids();
    const killedAt = Date.now();
    process.kill(pid!, 'SIGKILL');
    const ms = await failedAfter(socket, callId, killedAt);
    assert.ok(ms < 5_000, `told FAILED ${ms} ms after the worker died`);
    assert.equal((await api(owner, 'GET', `/api/calls/${callId}`)).json().endReason, 'FAILED');
    await until(() => sfu.workerPids()[0] !== pid, 'a new worker', 5_000);
    const next = await answeredCall();
    const media = await api(next.owner, 'GET', `/api/calls/${next.callId}/media`);
    assert.equal(media.statusCode, 200, media.body);
    await api(next.owner, 'POST', `/api/calls/${next.callId}/end`);
    await api(next.b, 'POST', `/api/calls/${next.callId}/end`);
  });

  it('a whole SFU node killed mid-call: its calls end FAILED within 5 s, and new calls answer 503 SFU_UNAVAILABLE before anyone rings', async () => {
    // The node under test is its own process, the only one: the in-process node goes for this test.
    await sfu.close();
    const node = await spawnRole('sfu', t.config, { SFU_CONTROL_PORT: '0', OPS_PORT: '0', SFU_RTC_MIN_PORT: '43000', SFU_RTC_MAX_PORT: '43099' }, (output) => output.includes('sfu node started'));
    try {
      const { socket, callId } = await answeredCall();
      const killedAt = Date.now();
      await node.kill('SIGKILL');
      // At once, while its announcement has not expired yet, and after: no call is placed on it.
      const other = await group();
      const ringing = await socketFor(other.b, 1);
      const unavailable = await api(other.owner, 'POST', '/api/calls', { roomId: other.roomId });
      assert.equal(unavailable.statusCode, 503, unavailable.body);
      assert.equal(unavailable.json().code, 'SFU_UNAVAILABLE');
      const ms = await failedAfter(socket, callId, killedAt);
      assert.ok(ms < 5_000, `told FAILED ${ms} ms after the node was killed`);
      const again = await api(other.owner, 'POST', '/api/calls', { roomId: other.roomId });
      assert.equal(again.json().code, 'SFU_UNAVAILABLE');
      assert.equal((await api(other.owner, 'GET', `/api/rooms/${other.roomId}/call`)).statusCode, 204, 'nothing was left behind');
      assert.equal(events(ringing, 'room-call.incoming').length, 0, 'nobody was rung');
    } finally {
      await node.kill('SIGKILL');
      sfu = await startSfuNode(t.ctx.platform, { port: 0 });
    }
  });

  it('a room lock left behind by a call that ended without releasing it does not block the next call', async () => {
    const { roomId, owner } = await group();
    await t.db.collection('room_call_locks').insertOne({ _id: roomId, callId: 'a-call-that-is-gone' } as never);
    const started = await api(owner, 'POST', '/api/calls', { roomId });
    assert.equal(started.statusCode, 200, started.body);
    assert.equal((await api(owner, 'GET', `/api/rooms/${roomId}/call`)).json().id, started.json().id);
    await api(owner, 'POST', `/api/calls/${started.json().id}/end`);
  });

  it('a device signed out during a room call leaves it, and the others are told', async () => {
    const { roomId, owner, b } = await group();
    const ownerSocket = await socketFor(owner, 0);
    const callId = (await api(owner, 'POST', '/api/calls', { roomId })).json().id as string;
    assert.equal((await api(b, 'POST', `/api/calls/${callId}/answer`)).statusCode, 200);
    assert.equal((await t.app.inject({ method: 'POST', url: '/api/auth/logout', headers: bearer(b.accessToken) })).statusCode, 204);
    await ownerSocket.until((r) => r.some((e) => e.event === 'room-call.left' && e.data.deviceId === b.deviceId));
    const after = await api(owner, 'GET', `/api/calls/${callId}`);
    assert.deepEqual(after.json().participants.map((p: { deviceId: string }) => p.deviceId), [owner.deviceId]);
    await api(owner, 'POST', `/api/calls/${callId}/end`);
  });

  it('a device holds at most 4 transports and sends at most 4 streams in a call: the 5th is refused', async () => {
    const { roomId, owner } = await group();
    const callId = (await api(owner, 'POST', '/api/calls', { roomId })).json().id as string;
    const transports: string[] = [];
    for (let i = 0; i < 4; i++) {
      const made = await api(owner, 'POST', `/api/calls/${callId}/media/transports`, { direction: i % 2 ? 'recv' : 'send', type: 'plain' });
      assert.equal(made.statusCode, 200, made.body);
      transports.push(made.json().id);
    }
    const produce = (ssrc: number) =>
      api(owner, 'POST', `/api/calls/${callId}/media/transports/${transports[0]}/produce`, {
        kind: 'audio',
        rtpParameters: { codecs: [{ mimeType: 'audio/opus', payloadType: 111, clockRate: 48_000, channels: 2 }], encodings: [{ ssrc }] },
      });
    for (let ssrc = 1001; ssrc <= 1004; ssrc++) assert.equal((await produce(ssrc)).statusCode, 200);
    const fifthStream = await produce(1005);
    assert.equal(fifthStream.statusCode, 400);
    assert.equal(fifthStream.json().code, 'MEDIA_LIMIT');
    const fifth = await api(owner, 'POST', `/api/calls/${callId}/media/transports`, { direction: 'send', type: 'plain' });
    assert.equal(fifth.statusCode, 400);
    assert.equal(fifth.json().code, 'MEDIA_LIMIT');
    await api(owner, 'POST', `/api/calls/${callId}/end`);
  });

  it('the control API refuses a wrong secret', async () => {
    const res = await fetch(`${sfu.url}/sfu/close`, { method: 'POST', headers: { 'x-sfu-secret': 'wrong-secret-wrong-secret' }, body: '{"callId":"x"}' });
    assert.equal(res.status, 401);
    const ok = await fetch(`${sfu.url}/sfu/producers`, { method: 'POST', headers: { 'x-sfu-secret': t.config.SFU_SECRET }, body: '{"callId":"x"}' });
    assert.deepEqual(await ok.json(), { producers: [] });
  });
});
