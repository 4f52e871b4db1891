import { z } from 'zod';
import { IdParam, IsoDateTime } from './common.schemas.js';

export const CallStartSchema = z
  .object({ calleeId: IdParam.describe('The user to call'), media: z.enum(['AUDIO', 'VIDEO']).default('AUDIO') })
  .meta({ id: 'CallStartRequest' });

const Sdp = z.object({ type: z.enum(['offer', 'answer']).optional(), sdp: z.string().min(1).max(20_000) }).strict();
const Candidate = z
  .object({
    candidate: z.string().max(2_048),
    sdpMid: z.string().max(64).nullable().optional(),
    sdpMLineIndex: z.number().int().min(0).max(255).nullable().optional(),
    usernameFragment: z.string().max(256).nullable().optional(),
  })
  .strict();

/** What a device relays to the other device of the call: an SDP offer or answer, or one ICE candidate. */
export const CallSignalSchema = z
  .discriminatedUnion('kind', [
    z.object({ kind: z.literal('offer'), payload: Sdp }),
    z.object({ kind: z.literal('answer'), payload: Sdp }),
    z.object({ kind: z.literal('candidate'), payload: Candidate }),
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
