import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Socket } from 'socket.io-client';
import type { Workers } from '../../workers/main.js';
import { bearer, freshPhone, signIn, startTestApp, startTestWorkers, type Session, type TestApp, recordedPush } from '../helpers/app.js';
import { DeviceClient, spawnHub, type HubProcess } from '../helpers/hubs.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const offer = { kind: 'offer', payload: { type: 'offer', sdp: 'v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\n' } };
const answerSdp = { kind: 'answer', payload: { type: 'answer', sdp: 'v=0\r\no=- 3 4 IN IP4 127.0.0.1\r\n' } };
const candidate = { kind: 'candidate', payload: { candidate: 'candidate:1 1 udp 2122260223 127.0.0.1 54400 typ host', sdpMid: '0', sdpMLineIndex: 0 } };

function emitSignal(socket: Socket, body: unknown): Promise<{ ok: boolean; code?: string; details?: { field: string; message: string }[] }> {
  return new Promise((resolve) => socket.emit('call.signal', body, resolve));
}

describe('calls between devices on different nodes', () => {
  let t: TestApp;
  let workers: Workers;
  const hubs: HubProcess[] = [];
  const clients: DeviceClient[] = [];

  before(async () => {
    t = await startTestApp({ CALL_RING_TIMEOUT: '2' });
    workers = await startTestWorkers(t);
    hubs.push(...(await Promise.all([spawnHub(t.config), spawnHub(t.config)])));
  });
  after(async () => {
    for (const c of clients) c.close();
    await Promise.all(hubs.map((hub) => hub.kill()));
    await workers.close();
    await t.close();
  });

  /** A caller with one device on node 0 and a callee with two devices on nodes 1 and 0, connected. */
  async function parties() {
    const caller = await signIn(t, freshPhone(), { name: 'Caller', platform: 'IOS' });
    const calleePhone = freshPhone();
    const d1 = await signIn(t, calleePhone, { name: 'D1', platform: 'ANDROID' });
    const d2 = await signIn(t, calleePhone, { name: 'D2', platform: 'IOS' });
    await t.ctx.repos.connections.connect(caller.userId, d1.userId, new Date());
    const sockets = { caller: new DeviceClient(caller.accessToken), d1: new DeviceClient(d1.accessToken), d2: new DeviceClient(d2.accessToken) };
    clients.push(...Object.values(sockets));
    await sockets.caller.connect(hubs[0]!.port);
    await sockets.d1.connect(hubs[1]!.port);
    await sockets.d2.connect(hubs[0]!.port);
    return { caller, d1, d2, sockets };
  }

  const call = (session: Session, calleeId: string, media = 'VIDEO') =>
    t.app.inject({ method: 'POST', url: '/api/calls', headers: bearer(session.accessToken), payload: { calleeId, media } });
  const act = (session: Session, callId: string, action: string, payload?: unknown) =>
    t.app.inject({ method: 'POST', url: `/api/calls/${callId}/${action}`, headers: bearer(session.accessToken), payload: payload as object });
  const events = (client: DeviceClient, name: string) => client.received.filter((e) => e.event === name);

  it('rings every callee device, the second device answers, signals flow only between the two devices, hang-up', async () => {
    const { caller, d1, d2, sockets } = await parties();
    const started = await call(caller, d1.userId);
    assert.equal(started.statusCode, 200);
    const callId = started.json().id;
    assert.equal(started.json().state, 'RINGING');
    assert.equal(started.json().media, 'VIDEO');

    await sockets.d1.until((r) => r.some((e) => e.event === 'call.incoming'));
    await sockets.d2.until((r) => r.some((e) => e.event === 'call.incoming'));
    assert.deepEqual(events(sockets.d1, 'call.incoming')[0]!.data, {
      callId,
      callerId: caller.userId,
      callerDeviceId: caller.deviceId,
      calleeId: d1.userId,
      media: 'VIDEO',
      state: 'RINGING',
    });
    // Signals wait for an answer.
    assert.equal((await emitSignal(sockets.caller.socket!, { callId, ...offer })).code, 'CALL_NOT_ACTIVE');

    const answered = await act(d2, callId, 'answer');
    assert.equal(answered.statusCode, 200);
    assert.equal(answered.json().state, 'ACTIVE');
    assert.equal(answered.json().answeredByDeviceId, d2.deviceId);
    const late = await act(d1, callId, 'answer');
    assert.equal(late.statusCode, 409);
    assert.equal(late.json().code, 'CALL_ALREADY_ANSWERED');
    for (const c of [sockets.caller, sockets.d1, sockets.d2]) {
      await c.until((r) => r.some((e) => e.event === 'call.answered'));
      assert.equal(events(c, 'call.answered')[0]!.data.answeredByDeviceId, d2.deviceId);
    }

    // Offer over the socket, answer over REST, candidates both ways.
    assert.deepEqual(await emitSignal(sockets.caller.socket!, { callId, ...offer }), { ok: true });
    await sockets.d2.until((r) => r.some((e) => e.event === 'call.signal' && e.data.kind === 'offer'));
    assert.equal((await act(d2, callId, 'signal', answerSdp)).statusCode, 204);
    await sockets.caller.until((r) => r.some((e) => e.event === 'call.signal' && e.data.kind === 'answer'));
    assert.deepEqual(await emitSignal(sockets.d2.socket!, { callId, ...candidate }), { ok: true });
    assert.deepEqual(await emitSignal(sockets.caller.socket!, { callId, ...candidate }), { ok: true });
    await sockets.caller.until((r) => r.some((e) => e.event === 'call.signal' && e.data.kind === 'candidate'));
    await sockets.d2.until((r) => r.some((e) => e.event === 'call.signal' && e.data.kind === 'candidate'));
    const toCaller = events(sockets.caller, 'call.signal').map((e) => [e.data.kind, e.data.fromDeviceId]);
    assert.deepEqual(toCaller, [['answer', d2.deviceId], ['candidate', d2.deviceId]]);
    assert.deepEqual(events(sockets.d2, 'call.signal')[0]!.data.payload, offer.payload);

    // The device that did not answer is not in the call.
    assert.equal((await emitSignal(sockets.d1.socket!, { callId, ...candidate })).code, 'CALL_NOT_IN_CALL');
    assert.equal((await act(d1, callId, 'signal', candidate)).statusCode, 400);
    const tooLong = await emitSignal(sockets.caller.socket!, { callId, kind: 'offer', payload: { sdp: 'x'.repeat(30_000) } });
    assert.equal(tooLong.code, 'VALIDATION_FAILED');
    assert.deepEqual(tooLong.details?.map((d) => d.field), ['payload.sdp'], 'the ack names the field, as REST does');
    // A signal whose kind disagrees with its description's type is refused, over the socket and REST alike.
    const mismatched = await emitSignal(sockets.caller.socket!, { callId, kind: 'offer', payload: { type: 'answer', sdp: 'v=0' } });
    assert.deepEqual([mismatched.code, mismatched.details?.map((d) => d.field)], ['VALIDATION_FAILED', ['payload.type']]);
    const overRest = await act(caller, callId, 'signal', { kind: 'answer', payload: { type: 'offer', sdp: 'v=0' } });
    assert.deepEqual([overRest.statusCode, overRest.json().details?.[0]?.field], [400, 'payload.type']);
    await sleep(200);
    assert.equal(events(sockets.d1, 'call.signal').length, 0);

    const ended = await act(caller, callId, 'end');
    assert.equal(ended.json().state, 'ENDED');
    assert.equal(ended.json().endReason, 'HANGUP');
    for (const c of [sockets.caller, sockets.d2]) await c.until((r) => r.some((e) => e.event === 'call.ended' && e.data.reason === 'HANGUP'));
    assert.equal((await act(d2, callId, 'signal', candidate)).json().code, 'CALL_NOT_ACTIVE');
    // Ending again changes nothing; both devices are free for the next call.
    assert.equal((await act(d2, callId, 'end')).json().endReason, 'HANGUP');
    const next = await call(caller, d1.userId);
    assert.equal(next.statusCode, 200);
    await act(caller, next.json().id, 'end');
  });

  it('a call nobody answers ends as missed after the ring timeout', async () => {
    const { caller, d1, sockets } = await parties();
    const callId = (await call(caller, d1.userId, 'AUDIO')).json().id;
    await sockets.caller.until((r) => r.some((e) => e.event === 'call.ended'), 8_000);
    const ended = events(sockets.caller, 'call.ended')[0]!;
    assert.equal(ended.data.reason, 'MISSED');
    assert.equal(ended.data.endedBy, null);
    await sockets.d1.until((r) => r.some((e) => e.event === 'call.ended'));
    const stored = await t.app.inject({ url: `/api/calls/${callId}`, headers: bearer(caller.accessToken) });
    assert.equal(stored.json().endReason, 'MISSED');
    assert.equal((await act(d1, callId, 'answer')).json().code, 'CALL_NOT_RINGING');
  });

  it('the callee rejects; the caller hears it', async () => {
    const { caller, d1, sockets } = await parties();
    const callId = (await call(caller, d1.userId)).json().id;
    const rejected = await act(d1, callId, 'reject');
    assert.equal(rejected.json().endReason, 'REJECTED');
    await sockets.caller.until((r) => r.some((e) => e.event === 'call.ended' && e.data.reason === 'REJECTED'));
    assert.equal((await act(caller, callId, 'reject')).json().code, 'CALL_NOT_CALLEE');
  });

  it('refuses calls to someone who blocked the caller, disabled incoming calls, is a stranger, or oneself', async () => {
    const caller = await signIn(t);
    const callee = await signIn(t);
    await t.ctx.repos.connections.connect(caller.userId, callee.userId, new Date());
    assert.equal((await call(caller, caller.userId)).json().code, 'CALL_SELF');
    assert.equal((await call(caller, 'no-such-user')).json().code, 'USER_NOT_FOUND');
    const stranger = await signIn(t);
    assert.equal((await call(caller, stranger.userId)).json().code, 'CALL_NOT_ALLOWED');

    await t.ctx.repos.connections.setIncomingCallsDisabled(callee.userId, caller.userId, true);
    const disabled = await call(caller, callee.userId);
    assert.equal(disabled.statusCode, 400);
    assert.equal(disabled.json().code, 'CALL_NOT_ALLOWED');
    // The setting is the callee's: the callee can still call the caller.
    const reverse = await call(callee, caller.userId);
    assert.equal(reverse.statusCode, 200);
    await act(callee, reverse.json().id, 'end');
    await t.ctx.repos.connections.setIncomingCallsDisabled(callee.userId, caller.userId, false);
    const allowed = await call(caller, callee.userId);
    assert.equal(allowed.statusCode, 200);
    await act(caller, allowed.json().id, 'end');

    await t.ctx.repos.blocks.block(callee.userId, caller.userId, 'SPAM', new Date());
    const blocked = await call(caller, callee.userId);
    assert.equal(blocked.statusCode, 400);
    assert.equal(blocked.json().code, 'CALL_NOT_ALLOWED');
    assert.equal(await t.db.collection('calls').countDocuments({ callerId: caller.userId, state: { $ne: 'ENDED' } }), 0);
  });

  it('one device is in at most one call', async () => {
    const { caller, d1 } = await parties();
    const other = await signIn(t);
    await t.ctx.repos.connections.connect(caller.userId, other.userId, new Date());
    const first = await call(caller, d1.userId);
    const second = await call(caller, other.userId);
    assert.equal(second.statusCode, 409);
    assert.equal(second.json().code, 'DEVICE_BUSY');
    await act(caller, first.json().id, 'end');
    const third = await call(caller, other.userId);
    assert.equal(third.statusCode, 200);
    await act(caller, third.json().id, 'end');
  });

  it('a device signed out during a call hangs it up', async () => {
    const { caller, d1, sockets } = await parties();
    const callId = (await call(caller, d1.userId)).json().id;
    assert.equal((await act(d1, callId, 'answer')).statusCode, 200);
    assert.equal((await t.app.inject({ method: 'POST', url: '/api/auth/logout', headers: bearer(d1.accessToken) })).statusCode, 204);
    await sockets.caller.until((r) => r.some((e) => e.event === 'call.ended' && e.data.callId === callId && e.data.reason === 'HANGUP'));
    // Nobody is left busy: the caller can call again.
    const again = await call(caller, d1.userId);
    assert.equal(again.statusCode, 200);
    await act(caller, again.json().id, 'end');
  });

  it('an offline callee device is rung by a recorded VoIP push', async () => {
    const caller = await signIn(t);
    const callee = await signIn(t, freshPhone(), { name: 'Sleeping iPhone', platform: 'IOS' });
    await t.ctx.repos.connections.connect(caller.userId, callee.userId, new Date());
    await t.app.inject({ method: 'PUT', url: '/api/devices/voip-push-token', headers: bearer(callee.accessToken), payload: { token: 'voip-sleeping-0001' } });
    const callId = (await call(caller, callee.userId)).json().id;
    const record = await recordedPush(t, { token: 'voip-sleeping-0001' });
    assert.ok(record, 'VoIP push recorded');
    assert.equal(record.service, 'APNS');
    assert.equal(record.message.kind, 'voip');
    assert.equal(record.message.data.callId, callId);
    assert.equal(record.message.data.event, 'call.incoming');
    await act(caller, callId, 'end');
  });
});
