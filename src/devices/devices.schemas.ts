import { z } from 'zod';
import { DEVICE_PLATFORMS } from './devices.repo.js';
import { IsoDateTime } from '../platform/common.schemas.js';

export const DeviceDtoSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    platform: z.enum(DEVICE_PLATFORMS),
    createdAt: IsoDateTime,
    lastSeenAt: IsoDateTime,
    current: z.boolean().describe('The device this access token was issued to'),
    pushEnabled: z.boolean(),
    voipPushEnabled: z.boolean(),
  })
  .meta({ id: 'DeviceDto' });

const PushToken = z.string().trim().min(8).max(4096);

export const PushTokenUpdateSchema = z
  .object({
    token: PushToken.nullable().describe('APNs device token or FCM registration token; null stops pushes'),
    provider: z.enum(['APNS', 'FCM']).default('FCM'),
  })
  .meta({ id: 'PushTokenUpdateRequest' });

export const VoipPushTokenUpdateSchema = z
  .object({ token: PushToken.nullable().describe('APNs VoIP (PushKit) token; null stops VoIP pushes') })
  .meta({ id: 'VoipPushTokenUpdateRequest' });
