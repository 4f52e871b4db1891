import { z } from 'zod';
import { IsoDateTime } from '../platform/common.schemas.js';

export const AttachmentDtoSchema = z
  .object({
    id: z.string(),
    roomId: z.string(),
    messageId: z.string(),
    uploaderId: z.string(),
    filename: z.string(),
    contentType: z.string(),
    kind: z.enum(['IMAGE', 'AUDIO', 'VIDEO', 'OTHER']),
    size: z.number().int(),
    status: z.enum(['PROCESSING', 'READY', 'FAILED']),
    hasThumbnail: z.boolean(),
    hasPoster: z.boolean(),
    createdAt: IsoDateTime,
  })
  .meta({ id: 'AttachmentDto' });

export const MediaTicketSchema = z.object({ url: z.string(), expiresAt: IsoDateTime }).meta({ id: 'MediaTicketDto' });
