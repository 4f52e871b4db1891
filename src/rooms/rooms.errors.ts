import { defineErrors } from '../platform/errors.js';

export const RoomsErrors = defineErrors('rooms', {
  TOO_MANY_INVITATIONS: { status: 429, message: 'Too many invitations to people you are not connected to; try again later' },
  ROOM_NOT_FOUND: { status: 400, message: 'No such room, or not one you may see' },
  MENTION_ROOM_NOT_ALLOWED: { status: 400, message: 'Only the room\'s creator and admins may mention the whole room (mentionsRoom)' },
  ROOM_NOT_ALLOWED: { status: 400, message: 'Only the room\'s creator or an admin may do this' },
  PUBLISH_NOT_ALLOWED: { status: 400, message: 'Only the creator or an admin may post here' },
  NOT_A_MEMBER: { status: 400, message: 'Not an enabled member of this room' },
  DIRECT_NEEDS_ONE_MEMBER: { status: 400, message: 'A direct chat takes exactly one other user' },
  ROOM_NAME_INVALID: { status: 400, message: 'A room name has 3 to 50 characters' },
  ROOM_LINK_TAKEN: { status: 400, message: 'Another room uses the link this name maps to' },
  ROOM_NOT_JOINABLE: { status: 400, message: 'Only public groups can be joined' },
  REMOVED_BY_ADMIN: { status: 400, message: 'An admin removed you from this group' },
  CANNOT_REMOVE_CREATOR: { status: 400, message: 'The creator cannot be removed' },
  CANNOT_DISABLE_CREATOR: { status: 400, message: 'The creator cannot be disabled' },
  CREATOR_IS_OWNER: { status: 400, message: 'The creator already has every right' },
  NOT_A_BROADCAST_ROOM: { status: 400, message: 'Only broadcast rooms have translations' },
  LANGUAGE_NOT_SUPPORTED: { status: 400, message: 'This language is not supported' },
  ORIGINAL_LANGUAGE: { status: 400, message: 'This is the original language' },
  ROOM_INVITES_REFUSED: { status: 400, message: 'This user does not accept being added to rooms by you' },
  INVITATION_NOT_FOUND: { status: 400, message: 'No pending invitation to this room' },
  INVITATION_DECLINED: { status: 400, message: 'This user declined an invitation to this room' },
});
