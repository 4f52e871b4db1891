import type { z } from 'zod';
import type { RoomDoc } from './rooms.repo.js';
import type { RoomDtoSchema } from './rooms.schemas.js';

/** As the RoomDto record of the OpenAPI document. */
export type RoomView = z.infer<typeof RoomDtoSchema>;

/** The room, in `language` when it has that version (broadcast rooms), else as written. */
export function presentRoom(room: RoomDoc, language?: string): RoomView {
  const version = language ? room.translations?.[language] : undefined;
  return {
    id: room._id,
    type: room.type,
    name: version?.name ?? room.name,
    description: version ? version.description : room.description,
    link: room.link,
    creatorId: room.creatorId,
    admins: room.admins,
    commentsEnabled: room.commentsEnabled,
    reactionsEnabled: room.reactionsEnabled !== false,
    participantPublishEnabled: room.participantPublishEnabled,
    visible: room.visible,
    memberCount: room.memberCount,
    // `!`: a translated version exists only for a language asked for.
    language: version ? language! : (room.language ?? 'en'),
    translatedInto: Object.keys(room.translations ?? {}).sort(),
    createdAt: room.createdAt.toISOString(),
  };
}
