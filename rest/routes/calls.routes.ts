import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { RouteOptions } from '../route-options.js';
import {
  AnyCallDtoSchema,
  CallSignalSchema,
  CallStartSchema,
  IceServersSchema,
  MediaConsumeSchema,
  MediaConsumerSchema,
  MediaProduceSchema,
  MediaProducerSchema,
  MediaSessionSchema,
  MediaTransportConnectSchema,
  MediaTransportCreateSchema,
  MediaTransportSchema,
  RoomCallDtoSchema,
} from '../../src/calls/calls.schemas.js';
import { IdParam, NoContentSchema } from '../../src/platform/common.schemas.js';
import { principalOf } from '../auth.js';
import { BODY_ERRORS, authedErrors } from '../responses.js';
import { CallsErrors } from '../../src/calls/calls.errors.js';
import { RoomsErrors } from '../../src/rooms/rooms.errors.js';
import { SfuErrors } from '../../src/sfu/sfu.errors.js';
import { UsersErrors } from '../../src/users/users.errors.js';

export const callsRoutes: FastifyPluginAsyncZod<RouteOptions> = async (app, { services }) => {
  const { calls, roomCalls, anyCall, ice } = services;
  const tags = ['Calls'];
  const security = [{ bearerAuth: [] }];
  const params = z.object({ callId: IdParam });
  const roomCall = (callId: string) => anyCall.roomCall(callId);

  app.get('/api/calls/ice-servers', {
    schema: {
      tags,
      security,
      summary: 'STUN and TURN servers with short-lived TURN credentials',
      description: 'TURN REST API credentials: username `<expiry-unix-seconds>:<userId>`, credential base64(HMAC-SHA1(secret, username)).',
      response: { 200: IceServersSchema, ...authedErrors() },
    },
    handler: async (request) => ice.servers(principalOf(request)),
  });

  app.post('/api/calls', {
    schema: {
      tags,
      security,
      summary: 'Call a user (rings every device of theirs) or start a call in a room (rings its members)',
      description:
        'With `calleeId`: a 1:1 call, media peer to peer. The callee gets `call.incoming` on every device (a VoIP push where offline). 400 CALL_NOT_ALLOWED when the two are neither connected nor share a room, when either blocked the other, or when the callee disabled incoming calls from the caller.\n\n' +
        'With `roomId`: a room call through the SFU, live at once with this device in it; every other enabled member gets `room-call.incoming` (a VoIP push where offline). 400 NOT_A_MEMBER for anyone but an enabled member, CALL_NOT_ALLOWED in a broadcast room for anyone but its creator and admins; 409 ROOM_CALL_IN_PROGRESS (details[0].callId names it) when the room has a call going on; 503 SFU_UNAVAILABLE when no media server is up.\n\n' +
        '409 DEVICE_BUSY when this device is already in a call.',
      body: CallStartSchema,
      response: { 200: AnyCallDtoSchema, ...authedErrors(CallsErrors.CALL_SELF, UsersErrors.USER_NOT_FOUND, CallsErrors.CALL_NOT_ALLOWED, CallsErrors.DEVICE_BUSY, RoomsErrors.ROOM_NOT_FOUND, RoomsErrors.NOT_A_MEMBER, CallsErrors.ROOM_CALL_IN_PROGRESS, SfuErrors.SFU_UNAVAILABLE, ...BODY_ERRORS) },
    },
    handler: async (request) => {
      const { calleeId, roomId, media } = request.body;
      return roomId ? roomCalls.start(principalOf(request), { roomId, media }) : calls.start(principalOf(request), { calleeId: calleeId ?? '', media });
    },
  });

  app.get('/api/rooms/:roomId/call', {
    schema: {
      tags,
      security,
      summary: "The room's call going on now",
      description: 'For members joining late. 204 when the room has no call. 400 NOT_A_MEMBER for anyone but an enabled member.',
      params: z.object({ roomId: IdParam }),
      response: { 200: RoomCallDtoSchema, 204: NoContentSchema, ...authedErrors(RoomsErrors.NOT_A_MEMBER) },
    },
    handler: async (request, reply) => {
      const call = await roomCalls.current(principalOf(request), request.params.roomId);
      return call ?? reply.code(204).send();
    },
  });

  app.get('/api/calls/:callId', {
    schema: { tags, security, summary: 'One call of the caller (1:1 or in one of their rooms)', params, response: { 200: AnyCallDtoSchema, ...authedErrors(CallsErrors.CALL_NOT_FOUND) } },
    handler: async (request) => {
      const principal = principalOf(request);
      return anyCall.get(principal, request.params.callId);
    },
  });

  app.post('/api/calls/:callId/answer', {
    schema: {
      tags,
      security,
      summary: 'Answer on this device: take a 1:1 call (the first device wins) or join a room call',
      description:
        "1:1: everyone in the call gets `call.answered`; the callee's other devices stop ringing. 409 CALL_ALREADY_ANSWERED when another device was first.\n\n" +
        'Room call: the devices in the call and the user\'s other devices get `room-call.joined`. 409 CALL_FULL past ROOM_CALL_MAX_PARTICIPANTS devices; 400 CALL_NOT_ACTIVE once it is over.',
      params,
      response: { 200: AnyCallDtoSchema, ...authedErrors(CallsErrors.CALL_NOT_FOUND, CallsErrors.CALL_NOT_CALLEE, CallsErrors.CALL_NOT_RINGING, CallsErrors.CALL_NOT_ACTIVE, CallsErrors.CALL_ALREADY_ANSWERED, CallsErrors.DEVICE_BUSY, CallsErrors.CALL_FULL, SfuErrors.SFU_UNAVAILABLE) },
    },
    handler: async (request) => {
      const principal = principalOf(request);
      return anyCall.answer(principal, request.params.callId);
    },
  });

  app.post('/api/calls/:callId/reject', {
    schema: {
      tags,
      security,
      summary: 'Decline a ringing call',
      description: "Room call: the user's devices get `room-call.ring-stopped` (DECLINED); the call goes on.",
      params,
      response: { 200: AnyCallDtoSchema, ...authedErrors(CallsErrors.CALL_NOT_FOUND, CallsErrors.CALL_NOT_CALLEE, CallsErrors.CALL_NOT_RINGING, CallsErrors.CALL_NOT_ACTIVE, CallsErrors.CALL_ALREADY_JOINED) },
    },
    handler: async (request) => {
      const principal = principalOf(request);
      return anyCall.reject(principal, request.params.callId);
    },
  });

  app.post('/api/calls/:callId/end', {
    schema: {
      tags,
      security,
      summary: 'Hang up (or cancel while ringing); in a room call, leave it',
      description:
        'Ending an ended call changes nothing. Room call: the others get `room-call.left`; when the last device leaves the call ends and every member gets `room-call.ended`.',
      params,
      response: { 200: AnyCallDtoSchema, ...authedErrors(CallsErrors.CALL_NOT_FOUND, CallsErrors.CALL_NOT_RINGING, CallsErrors.CALL_NOT_ACTIVE) },
    },
    handler: async (request) => {
      const principal = principalOf(request);
      return anyCall.end(principal, request.params.callId);
    },
  });

  const mediaDescription = 'For devices in a room call (400 CALL_NOT_IN_CALL otherwise; CALL_NOT_IN_ROOM for 1:1 calls, whose media flows peer to peer). ';

  app.get('/api/calls/:callId/media', {
    schema: {
      tags,
      security,
      summary: "A room call's media session: the router's RTP capabilities and the media being sent",
      description: mediaDescription + 'Load the capabilities into the device (mediasoup-client `Device.load`), then consume each producer.',
      params,
      response: { 200: MediaSessionSchema, ...authedErrors(CallsErrors.CALL_NOT_IN_ROOM, CallsErrors.CALL_NOT_FOUND, CallsErrors.CALL_NOT_ACTIVE, CallsErrors.CALL_NOT_IN_CALL, SfuErrors.MEDIA_NOT_FOUND, SfuErrors.SFU_FAILED, SfuErrors.SFU_UNAVAILABLE) },
    },
    handler: async (request) => {
      const principal = principalOf(request);
      const call = await roomCall(request.params.callId);
      const [{ rtpCapabilities }, producers] = await Promise.all([roomCalls.capabilities(principal, call), roomCalls.producers(principal, call)]);
      // Cast: mediasoup's capabilities object, documented as a free-form object.
      return { rtpCapabilities: rtpCapabilities as Record<string, unknown>, producers };
    },
  });

  app.post('/api/calls/:callId/media/transports', {
    schema: {
      tags,
      security,
      summary: 'Open a send or receive transport on the SFU',
      description:
        mediaDescription +
        'WebRTC transports answer ICE and DTLS parameters; plain RTP transports an ip and port, with RTCP on the same port. A plain send transport takes the sender\'s address from the first packet it gets (comedia), so RTP and RTCP must leave from one socket. 400 MEDIA_LIMIT past 4 transports per device and call.',
      params,
      body: MediaTransportCreateSchema,
      response: { 200: MediaTransportSchema, ...authedErrors(CallsErrors.CALL_NOT_IN_ROOM, CallsErrors.CALL_NOT_FOUND, CallsErrors.CALL_NOT_ACTIVE, CallsErrors.CALL_NOT_IN_CALL, SfuErrors.MEDIA_NOT_FOUND, SfuErrors.MEDIA_LIMIT, SfuErrors.MEDIA_REJECTED, SfuErrors.SFU_FAILED, SfuErrors.SFU_UNAVAILABLE, ...BODY_ERRORS) },
    },
    handler: async (request) => {
      const info = await roomCalls.createTransport(principalOf(request), await roomCall(request.params.callId), request.body);
      // Cast: the SFU's protocol types mediasoup's parameters as unknown; the document describes them.
      return info as z.infer<typeof MediaTransportSchema>;
    },
  });

  const transportParams = z.object({ callId: IdParam, transportId: IdParam });

  app.post('/api/calls/:callId/media/transports/:transportId/connect', {
    schema: {
      tags,
      security,
      summary: "Connect a transport: the device's DTLS parameters (webrtc), or where to send (plain receive)",
      description: mediaDescription,
      params: transportParams,
      body: MediaTransportConnectSchema,
      response: { 204: NoContentSchema, ...authedErrors(CallsErrors.CALL_NOT_IN_ROOM, CallsErrors.CALL_NOT_FOUND, CallsErrors.CALL_NOT_ACTIVE, CallsErrors.CALL_NOT_IN_CALL, SfuErrors.MEDIA_NOT_FOUND, SfuErrors.TRANSPORT_NOT_FOUND, SfuErrors.MEDIA_REJECTED, SfuErrors.SFU_FAILED, SfuErrors.SFU_UNAVAILABLE, ...BODY_ERRORS) },
    },
    handler: async (request, reply) => {
      await roomCalls.connectTransport(principalOf(request), await roomCall(request.params.callId), request.params.transportId, request.body);
      return reply.code(204).send();
    },
  });

  app.post('/api/calls/:callId/media/transports/:transportId/produce', {
    schema: {
      tags,
      security,
      summary: 'Send audio or video on a send transport',
      description: mediaDescription + 'The other devices in the call get `room-call.media-added`. Video in an audio call is refused. 400 MEDIA_LIMIT past 4 streams per device and call.',
      params: transportParams,
      body: MediaProduceSchema,
      response: { 200: MediaProducerSchema, ...authedErrors(CallsErrors.CALL_NOT_IN_ROOM, CallsErrors.CALL_NOT_FOUND, CallsErrors.CALL_NOT_ACTIVE, CallsErrors.CALL_NOT_IN_CALL, SfuErrors.MEDIA_NOT_FOUND, SfuErrors.TRANSPORT_NOT_FOUND, SfuErrors.MEDIA_LIMIT, SfuErrors.MEDIA_REJECTED, SfuErrors.SFU_FAILED, SfuErrors.SFU_UNAVAILABLE, ...BODY_ERRORS) },
    },
    handler: async (request) => roomCalls.produce(principalOf(request), await roomCall(request.params.callId), request.params.transportId, request.body),
  });

  app.post('/api/calls/:callId/media/transports/:transportId/consume', {
    schema: {
      tags,
      security,
      summary: "Receive another device's media on a receive transport",
      description: mediaDescription + 'The consumer starts paused: resume it once the device has set it up. 400 MEDIA_LIMIT past 200 consumers per device and call.',
      params: transportParams,
      body: MediaConsumeSchema,
      response: { 200: MediaConsumerSchema, ...authedErrors(CallsErrors.CALL_NOT_IN_ROOM, CallsErrors.CALL_NOT_FOUND, CallsErrors.CALL_NOT_ACTIVE, CallsErrors.CALL_NOT_IN_CALL, SfuErrors.MEDIA_NOT_FOUND, SfuErrors.TRANSPORT_NOT_FOUND, SfuErrors.PRODUCER_NOT_FOUND, SfuErrors.MEDIA_LIMIT, SfuErrors.MEDIA_REJECTED, SfuErrors.SFU_FAILED, SfuErrors.SFU_UNAVAILABLE, ...BODY_ERRORS) },
    },
    handler: async (request) => {
      const consumer = await roomCalls.consume(principalOf(request), await roomCall(request.params.callId), request.params.transportId, request.body);
      // Cast: as above: mediasoup's RTP parameters, typed unknown in the SFU protocol.
      return consumer as z.infer<typeof MediaConsumerSchema>;
    },
  });

  app.post('/api/calls/:callId/media/consumers/:consumerId/resume', {
    schema: {
      tags,
      security,
      summary: 'Start receiving on a consumer',
      description: mediaDescription,
      params: z.object({ callId: IdParam, consumerId: IdParam }),
      response: { 204: NoContentSchema, ...authedErrors(CallsErrors.CALL_NOT_IN_ROOM, CallsErrors.CALL_NOT_FOUND, CallsErrors.CALL_NOT_ACTIVE, CallsErrors.CALL_NOT_IN_CALL, SfuErrors.MEDIA_NOT_FOUND, SfuErrors.CONSUMER_NOT_FOUND, SfuErrors.MEDIA_REJECTED, SfuErrors.SFU_FAILED, SfuErrors.SFU_UNAVAILABLE) },
    },
    handler: async (request, reply) => {
      await roomCalls.resume(principalOf(request), await roomCall(request.params.callId), request.params.consumerId);
      return reply.code(204).send();
    },
  });

  app.post('/api/calls/:callId/signal', {
    schema: {
      tags,
      security,
      summary: 'Relay an SDP offer/answer or ICE candidate to the other device of the call',
      description: 'Also available on the socket as `call.signal`. The other device gets a `call.signal` event.',
      params,
      body: CallSignalSchema,
      response: { 204: NoContentSchema, ...authedErrors(CallsErrors.CALL_NOT_FOUND, CallsErrors.CALL_NOT_ACTIVE, CallsErrors.CALL_NOT_IN_CALL, ...BODY_ERRORS) },
    },
    handler: async (request, reply) => {
      await calls.signal(principalOf(request), request.params.callId, request.body);
      return reply.code(204).send();
    },
  });
};
