// A browser client for the service's calls, as docs/clients/calls.md describes them: the device
// socket (socket.io-client, WebSocket only), 1:1 calls peer to peer with the browser's own
// RTCPeerConnection, and room calls through the SFU with mediasoup-client. Bundled for the page by
// examples/calls/serve.mjs (esbuild); `npm test` drives it in Chromium (test/browser/calls.test.ts).
import { Device } from 'mediasoup-client';
import { io } from 'socket.io-client';

/** An answer that is not 2xx, with the service's error code (`{code, message}` body). */
export class ServiceError extends Error {
  constructor(status, body) {
    super(`${status} ${body?.code ?? ''} ${body?.message ?? ''}`.trim());
    this.status = status;
    this.code = body?.code;
  }
}

/** One signed-in device: REST with its access token, and its socket to the hub. */
export class ChatDevice {
  /** `api`: the REST base (http://127.0.0.1:8080); `hub`: the socket base (http://127.0.0.1:8081). */
  constructor({ api, hub, token }) {
    this.api = api.replace(/\/$/, '');
    this.hub = hub;
    this.token = token;
    this.lastSeq = 0;
    this.listeners = new Map();
    this.events = [];
  }

  async request(method, path, body) {
    const response = await fetch(`${this.api}${path}`, {
      method,
      headers: { authorization: `Bearer ${this.token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    const json = text ? JSON.parse(text) : undefined;
    if (!response.ok) throw new ServiceError(response.status, json);
    return json;
  }

  /** Opens the socket; device events (`{seq, at, data}`) are handed to `on` listeners and acknowledged. */
  connect() {
    this.socket = io(this.hub, {
      path: '/socket.io/',
      transports: ['websocket'],
      // A function: each reconnection sends the newest lastSeq, so nothing is replayed twice.
      auth: (send) => send({ token: this.token, lastSeq: this.lastSeq }),
    });
    this.socket.onAny((event, envelope) => {
      if (envelope && typeof envelope.seq === 'number') {
        if (envelope.seq <= this.lastSeq) return;
        this.lastSeq = envelope.seq;
        this.events.push({ event, data: envelope.data });
        for (const listener of this.listeners.get(event) ?? []) listener(envelope.data);
        this.socket.emit('inbox.ack', { seq: envelope.seq });
      }
    });
    return new Promise((resolve, reject) => {
      this.socket.once('connect', resolve);
      this.socket.once('connect_error', reject);
    });
  }

  on(event, listener) {
    if (!this.listeners.has(event)) this.listeners.set(event, []);
    this.listeners.get(event).push(listener);
  }

  /** The next `event` whose data passes `test` (or one already received). */
  next(event, test = () => true, timeoutMs = 15_000) {
    const seen = this.events.find((e) => e.event === event && test(e.data));
    if (seen) return Promise.resolve(seen.data);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no ${event} within ${timeoutMs} ms`)), timeoutMs);
      this.on(event, (data) => {
        if (!test(data)) return;
        clearTimeout(timer);
        resolve(data);
      });
    });
  }

  /** Sends a call signal over the socket; the acknowledgement says whether the service relayed it. */
  signal(callId, kind, payload) {
    return new Promise((resolve, reject) => {
      this.socket.timeout(10_000).emit('call.signal', { callId, kind, payload }, (timeout, ack) => {
        if (timeout) reject(timeout);
        else if (!ack.ok) reject(new ServiceError(ack.status, ack));
        else resolve();
      });
    });
  }

  close() {
    this.socket?.close();
  }
}

/** The camera and microphone (fake devices in the tests). */
export function localMedia(video = true) {
  return navigator.mediaDevices.getUserMedia({ audio: true, video: video ? { width: 320, height: 240 } : false });
}

/**
 * A 1:1 call, peer to peer. The caller offers once `call.answered` arrives (so there is never an
 * offer in both directions); candidates trickle as they are found, and an empty candidate says
 * there are no more. `policy: 'relay'` forces the TURN relay, as on networks that block UDP.
 */
export class OneToOneCall {
  constructor(device, { policy = 'all' } = {}) {
    this.device = device;
    this.policy = policy;
    this.pendingCandidates = [];
  }

  /** The caller: starts the call, and offers when it is answered. */
  async call(calleeId, media = 'VIDEO') {
    const call = await this.device.request('POST', '/api/calls', { calleeId, media });
    this.callId = call.id;
    this.listen();
    await this.device.next('call.answered', (data) => data.callId === this.callId);
    await this.open(media === 'VIDEO');
    const offer = await this.pc.createOffer();
    await this.pc.setLocalDescription(offer);
    await this.device.signal(this.callId, 'offer', { type: 'offer', sdp: offer.sdp });
    return this.callId;
  }

  /** The callee: answers the call that rang; the caller's offer follows. */
  async answer(callId) {
    this.callId = callId;
    this.listen();
    const call = await this.device.request('POST', `/api/calls/${callId}/answer`);
    await this.open(call.media === 'VIDEO');
    return callId;
  }

  async open(video) {
    const { iceServers } = await this.device.request('GET', '/api/calls/ice-servers');
    const pc = new RTCPeerConnection({ iceServers, iceTransportPolicy: this.policy });
    this.stream = await localMedia(video);
    for (const track of this.stream.getTracks()) pc.addTrack(track, this.stream);
    // Only now the connection is this call's: an offer that came while the camera was opening waits
    // for it (listen), so the answer carries this side's tracks. Answered earlier, it said "receive
    // only", and the caller heard nothing: seen when the camera took long to open under load.
    this.pc = pc;
    this.pc.onicecandidate = ({ candidate }) => {
      // null: gathering is over. Sent as an empty candidate, as the browser itself marks the end.
      const payload = candidate
        ? { candidate: candidate.candidate, sdpMid: candidate.sdpMid, sdpMLineIndex: candidate.sdpMLineIndex, usernameFragment: candidate.usernameFragment }
        : { candidate: '' };
      void this.device.signal(this.callId, 'candidate', payload).catch(() => undefined);
    };
    // Candidates that came before stay kept: they are added once the other side's description is set
    // (listen), as a candidate added before it is refused and lost.
  }

  listen() {
    this.device.on('call.signal', async ({ callId, kind, payload }) => {
      if (callId !== this.callId) return;
      if (kind === 'offer') {
        while (!this.pc) await new Promise((resolve) => setTimeout(resolve, 10));
        await this.pc.setRemoteDescription(payload);
        const answer = await this.pc.createAnswer();
        await this.pc.setLocalDescription(answer);
        await this.device.signal(this.callId, 'answer', { type: 'answer', sdp: answer.sdp });
        for (const candidate of this.pendingCandidates.splice(0)) await this.addCandidate(candidate);
      } else if (kind === 'answer') {
        await this.pc.setRemoteDescription(payload);
        for (const candidate of this.pendingCandidates.splice(0)) await this.addCandidate(candidate);
      } else if (kind === 'candidate') {
        // Candidates can arrive before the description they belong to: kept until it is set.
        if (!this.pc || !this.pc.remoteDescription) this.pendingCandidates.push(payload);
        else await this.addCandidate(payload);
      }
    });
  }

  addCandidate(payload) {
    return this.pc.addIceCandidate(payload.candidate === '' ? null : payload).catch(() => undefined);
  }

  /** The selected candidate pair's types and the bytes received per kind. */
  async stats() {
    // Not yet connecting: the camera is still opening.
    if (!this.pc) return { connectionState: 'new', local: undefined, remote: undefined, received: { audio: 0, video: 0 } };
    const report = await this.pc.getStats();
    const all = [...report.values()];
    const transport = all.find((s) => s.type === 'transport');
    const pair = report.get(transport?.selectedCandidatePairId) ?? all.find((s) => s.type === 'candidate-pair' && s.nominated && s.state === 'succeeded');
    const received = { audio: 0, video: 0 };
    for (const s of all) if (s.type === 'inbound-rtp') received[s.kind] += s.bytesReceived;
    return {
      connectionState: this.pc.connectionState,
      local: pair ? report.get(pair.localCandidateId)?.candidateType : undefined,
      remote: pair ? report.get(pair.remoteCandidateId)?.candidateType : undefined,
      received,
    };
  }

  async hangUp() {
    this.pc?.close();
    for (const track of this.stream?.getTracks() ?? []) track.stop();
    await this.device.request('POST', `/api/calls/${this.callId}/end`);
  }
}

/**
 * A room call through the SFU, step by step as docs/clients/calls.md lists them: join (start or
 * answer), load the router's capabilities, open a send and a receive transport, send the camera
 * and microphone, consume everyone else's media (now and as `room-call.media-added` says), and
 * close what a participant's `room-call.left` takes away.
 */
export class RoomCall {
  constructor(device) {
    this.device = device;
    this.consumers = new Map();
    this.producers = [];
    this.left = [];
    this.errors = [];
  }

  /** Starts the room's call (`roomId`) or joins the ringing one (`callId`). */
  async join({ roomId, callId, media = 'VIDEO' }) {
    const call = roomId ? await this.device.request('POST', '/api/calls', { roomId, media }) : await this.device.request('POST', `/api/calls/${callId}/answer`);
    this.callId = call.id;
    this.joinedAt = performance.now();
    // Media announced before the receive transport exists waits for it.
    let transportsReady;
    this.ready = new Promise((resolve) => (transportsReady = resolve));
    // Listen before reading the session, so no producer falls between the read and the events.
    this.device.on('room-call.media-added', (data) => {
      if (data.callId === this.callId) void this.consume(data.producerId);
    });
    this.device.on('room-call.left', (data) => {
      if (data.callId !== this.callId) return;
      this.left.push(data.deviceId);
      for (const producerId of data.closedProducerIds) {
        this.consumers.get(producerId)?.close();
        this.consumers.delete(producerId);
      }
    });
    const session = await this.device.request('GET', `/api/calls/${this.callId}/media`);
    this.mediasoup = new Device();
    await this.mediasoup.load({ routerRtpCapabilities: session.rtpCapabilities });
    this.sendTransport = await this.transport('send');
    this.recvTransport = await this.transport('recv');
    transportsReady();
    this.stream = await localMedia(call.media === 'VIDEO');
    for (const track of this.stream.getTracks()) this.producers.push(await this.sendTransport.produce({ track }));
    await Promise.all(session.producers.map((producer) => this.consume(producer.producerId)));
    return this.callId;
  }

  async transport(direction) {
    const info = await this.device.request('POST', `/api/calls/${this.callId}/media/transports`, { direction, type: 'webrtc' });
    const options = { id: info.id, iceParameters: info.iceParameters, iceCandidates: info.iceCandidates, dtlsParameters: info.dtlsParameters };
    const transport = direction === 'send' ? this.mediasoup.createSendTransport(options) : this.mediasoup.createRecvTransport(options);
    transport.on('connect', ({ dtlsParameters }, done, fail) => {
      this.device.request('POST', `/api/calls/${this.callId}/media/transports/${info.id}/connect`, { dtlsParameters }).then(done, fail);
    });
    if (direction === 'send') {
      transport.on('produce', ({ kind, rtpParameters }, done, fail) => {
        this.device.request('POST', `/api/calls/${this.callId}/media/transports/${info.id}/produce`, { kind, rtpParameters }).then(({ producerId }) => done({ id: producerId }), fail);
      });
    }
    return transport;
  }

  /** Receives one producer: consume (paused), set it up, then resume. Each producer once. */
  async consume(producerId) {
    if (this.consumers.has(producerId)) return;
    this.consumers.set(producerId, null);
    await this.ready;
    let info;
    let consumer;
    try {
      info = await this.device.request('POST', `/api/calls/${this.callId}/media/transports/${this.recvTransport.id}/consume`, { producerId, rtpCapabilities: this.mediasoup.rtpCapabilities });
      consumer = await this.recvTransport.consume({ id: info.consumerId, producerId, kind: info.kind, rtpParameters: info.rtpParameters });
    } catch (error) {
      // PRODUCER_NOT_FOUND: its sender left meanwhile. Anything else is the page's to show.
      this.consumers.delete(producerId);
      if (error.code !== 'PRODUCER_NOT_FOUND') this.errors.push(String(error));
      return;
    }
    if (!this.consumers.has(producerId)) {
      // Its sender left while it was being set up.
      consumer.close();
      return;
    }
    this.consumers.set(producerId, consumer);
    await this.device.request('POST', `/api/calls/${this.callId}/media/consumers/${info.consumerId}/resume`);
  }

  /** Per consumer: its kind and the bytes it received; and when the first byte arrived. */
  async stats() {
    const consumers = [];
    for (const [producerId, consumer] of this.consumers) {
      if (!consumer) continue;
      let bytes = 0;
      for (const s of (await consumer.getStats()).values()) if (s.type === 'inbound-rtp') bytes += s.bytesReceived;
      consumers.push({ producerId, kind: consumer.kind, bytes });
    }
    if (this.firstByteMs === undefined && consumers.some((c) => c.bytes > 0)) this.firstByteMs = performance.now() - this.joinedAt;
    return { consumers, firstByteMs: this.firstByteMs, left: this.left, errors: this.errors };
  }

  async leave() {
    for (const track of this.stream?.getTracks() ?? []) track.stop();
    this.sendTransport?.close();
    this.recvTransport?.close();
    await this.device.request('POST', `/api/calls/${this.callId}/end`);
  }
}
