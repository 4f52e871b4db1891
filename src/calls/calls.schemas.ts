import { z } from 'zod';
import { IdParam, IsoDateTime } from '../platform/common.schemas.js';

export const CallStartSchema = z
  .object({
    calleeId: IdParam.optional().describe('The user to call (a 1:1 call, peer to peer)'),
    roomId: IdParam.optional().describe('The room to call (a room call, through the SFU)'),
    media: z.enum(['AUDIO', 'VIDEO']).default('AUDIO'),
  })
  .refine((body) => (body.calleeId === undefined) !== (body.roomId === undefined), { message: 'give exactly one of calleeId and roomId', path: ['calleeId'] })
  .meta({ id: 'CallStartRequest' });

/** An SDP offer or answer as RTCSessionDescription serialises it; its `type`, if given, must agree with the signal's `kind`. */
const sdpOf = <T extends 'offer' | 'answer'>(type: T) =>
  z
    .object({ type: z.literal(type).optional().describe(`"${type}", as the signal's kind (RTCSessionDescription.type)`), sdp: z.string().min(1).max(20_000) })
    .strict()
    .meta({ id: type === 'offer' ? 'SessionDescriptionOffer' : 'SessionDescriptionAnswer' });
const Candidate = z
  .object({
    candidate: z.string().max(2_048).describe('An empty string marks the end of candidates (as RTCPeerConnection gives it)'),
    sdpMid: z.string().max(64).nullable().optional(),
    sdpMLineIndex: z.number().int().min(0).max(255).nullable().optional(),
    usernameFragment: z.string().max(256).nullable().optional(),
  })
  .strict()
  .meta({ id: 'IceCandidate' });

/** What a device relays to the other device of the call: an SDP offer or answer, or one ICE candidate. */
export const CallSignalSchema = z
  .discriminatedUnion('kind', [
    z.object({ kind: z.literal('offer'), payload: sdpOf('offer') }).meta({ id: 'CallSignalOffer' }),
    z.object({ kind: z.literal('answer'), payload: sdpOf('answer') }).meta({ id: 'CallSignalAnswer' }),
    z.object({ kind: z.literal('candidate'), payload: Candidate }).meta({ id: 'CallSignalCandidate' }),
  ])
  .meta({ id: 'CallSignalRequest' });

export const CallDtoSchema = z
  .object({
    id: z.string(),
    callerId: z.string(),
    callerDeviceId: z.string(),
    calleeId: z.string(),
    media: z.enum(['AUDIO', 'VIDEO']),
    state: z.enum(['RINGING', 'ACTIVE', 'ENDED']),
    answeredByDeviceId: z.string().nullable(),
    endReason: z.enum(['HANGUP', 'MISSED', 'REJECTED', 'CANCELLED', 'FAILED']).nullable(),
    createdAt: IsoDateTime,
    ringUntil: IsoDateTime,
    answeredAt: IsoDateTime.nullable(),
    endedAt: IsoDateTime.nullable(),
  })
  .meta({ id: 'CallDto' });

export const IceServersSchema = z
  .object({
    iceServers: z.array(z.object({ urls: z.array(z.string()), username: z.string().optional(), credential: z.string().optional() })),
    ttl: z.number().int().describe('Seconds the TURN credentials stay valid'),
    expiresAt: IsoDateTime,
  })
  .meta({ id: 'IceServers' });

export const RoomCallDtoSchema = z
  .object({
    id: z.string(),
    roomId: z.string(),
    startedBy: z.string(),
    media: z.enum(['AUDIO', 'VIDEO']),
    state: z.enum(['ACTIVE', 'ENDED']),
    participants: z.array(z.object({ userId: z.string(), deviceId: z.string(), joinedAt: IsoDateTime })),
    endReason: z.enum(['HANGUP', 'MISSED', 'FAILED']).nullable(),
    createdAt: IsoDateTime,
    ringUntil: IsoDateTime,
    endedAt: IsoDateTime.nullable(),
  })
  .meta({ id: 'RoomCallDto' });

/** What GET, answer, reject and end return: a 1:1 call (`calleeId`) or a room call (`roomId`). */
export const AnyCallDtoSchema = z.union([CallDtoSchema, RoomCallDtoSchema]);

/** Opaque mediasoup/WebRTC structures, checked by the SFU itself (its refusals are 400 MEDIA_REJECTED). */
const MediaObject = z.record(z.string(), z.unknown());

export const MediaTransportCreateSchema = z
  .object({
    direction: z.enum(['send', 'recv']),
    type: z.enum(['webrtc', 'plain']).default('webrtc').describe('webrtc for devices; plain RTP for servers such as recorders and gateways'),
  })
  .meta({ id: 'MediaTransportCreateRequest' });

export const MediaTransportSchema = z
  .object({
    id: z.string(),
    type: z.enum(['webrtc', 'plain']),
    direction: z.enum(['send', 'recv']),
    iceParameters: MediaObject.optional(),
    iceCandidates: z.array(MediaObject).optional(),
    dtlsParameters: MediaObject.optional(),
    ip: z.string().optional().describe('plain: where the SFU listens'),
    port: z.number().int().optional(),
  })
  .meta({ id: 'MediaTransport' });

export const MediaTransportConnectSchema = z
  .object({
    dtlsParameters: MediaObject.optional().describe('webrtc: the device\'s DTLS role and fingerprints'),
    ip: z.ipv4().or(z.ipv6()).optional().describe('plain receive transports: where to send the media'),
    port: z.number().int().min(1).max(65_535).optional(),
  })
  .refine((body) => body.dtlsParameters !== undefined || (body.ip !== undefined && body.port !== undefined), {
    message: 'give dtlsParameters (webrtc) or ip and port (plain)',
    path: ['dtlsParameters'],
  })
  .meta({ id: 'MediaTransportConnectRequest' });

export const MediaProduceSchema = z.object({ kind: z.enum(['audio', 'video']), rtpParameters: MediaObject }).meta({ id: 'MediaProduceRequest' });
export const MediaConsumeSchema = z.object({ producerId: IdParam, rtpCapabilities: MediaObject }).meta({ id: 'MediaConsumeRequest' });

export const MediaProducerSchema = z
  .object({ producerId: z.string(), deviceId: z.string(), userId: z.string(), kind: z.enum(['audio', 'video']) })
  .meta({ id: 'MediaProducer' });

export const MediaConsumerSchema = z
  .object({ consumerId: z.string(), producerId: z.string(), kind: z.enum(['audio', 'video']), rtpParameters: MediaObject })
  .meta({ id: 'MediaConsumer' });

export const MediaSessionSchema = z
  .object({ rtpCapabilities: MediaObject.describe('The call router\'s RTP capabilities'), producers: z.array(MediaProducerSchema) })
  .meta({ id: 'MediaSession' });
