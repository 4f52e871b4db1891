import { z } from 'zod';
import { IdParam, IsoDateTime } from '../platform/common.schemas.js';

export const PresenceQuerySchema = z.object({
  userIds: z
    .string()
    .transform((value) => value.split(',').map((id) => id.trim()).filter(Boolean))
    .pipe(z.array(IdParam).min(1).max(100))
    .describe('Comma-separated user ids, at most 100'),
});

const DevicePresenceSchema = z.object({ deviceId: z.string(), online: z.boolean(), lastSeenAt: IsoDateTime.nullable() });

export const UserPresenceSchema = z
  .object({ userId: z.string(), online: z.boolean(), lastSeenAt: IsoDateTime.nullable(), devices: z.array(DevicePresenceSchema) })
  .meta({ id: 'UserPresence' });
