import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { RouteOptions } from '../route-options.js';
import { IdParam, LanguageParam, NoContentSchema } from '../../src/platform/common.schemas.js';
import { pagedSchema, pagingQuery } from '../../src/platform/common.schemas.js';
import {
  EnabledQuerySchema,
  MutedQuerySchema,
  MutedSchema,
  NotificationsRequestSchema,
  NotificationsSchema,
  PublishQuerySchema,
  RoomCreateSchema,
  RoomDtoSchema,
  RoomSearchSchema,
  RoomTranslationSchema,
  RoomUpdateQuerySchema,
  AnswerInvitationQuerySchema,
  RoomInvitationDtoSchema,
} from '../../src/rooms/rooms.schemas.js';
import { principalOf } from '../auth.js';
import { BODY_ERRORS, authedErrors } from '../responses.js';
import { ContactsErrors } from '../../src/contacts/contacts.errors.js';
import { RoomsErrors } from '../../src/rooms/rooms.errors.js';
import { UsersErrors } from '../../src/users/users.errors.js';

export const roomsRoutes: FastifyPluginAsyncZod<RouteOptions> = async (app, { services }) => {
  const { rooms, roomInvitations } = services;
  const tags = ['Rooms'];
  const security = [{ bearerAuth: [] }];
  const room = z.object({ roomId: IdParam });
  const member = z.object({ roomId: IdParam, userId: IdParam });
  const page = pagedSchema(RoomDtoSchema, 'PagedModelRoomDto');
  const invitationPage = pagedSchema(RoomInvitationDtoSchema, 'PagedModelRoomInvitationDto');

  app.post('/api/rooms', {
    schema: {
      tags,
      security,
      summary: 'Create a room',
      description:
        'A direct chat takes exactly one other member and is unique per pair: creating it again returns the existing one. Other kinds need a name of 3 to 50 characters; public groups and broadcast rooms get a readable link from it (400 ROOM_LINK_TAKEN when another room uses it). ' +
        'Of `memberIds`, the caller\'s connections become members at once; anyone else gets an invitation (`room.invitation`; for a direct chat, a message request) and is a member only once they accept. ' +
        '400 ROOM_INVITES_REFUSED when a user\'s `roomInvites` setting refuses the caller, 400 BLOCKED when a block stands either way, 429 TOO_MANY_INVITATIONS (with Retry-After) past the invitations to strangers allowed per hour, or when one has too many waiting: then nothing is made.',
      body: RoomCreateSchema,
      response: { 200: RoomDtoSchema, ...authedErrors(RoomsErrors.ROOM_NAME_INVALID, RoomsErrors.DIRECT_NEEDS_ONE_MEMBER, UsersErrors.USER_NOT_FOUND, ContactsErrors.BLOCKED, RoomsErrors.ROOM_INVITES_REFUSED, RoomsErrors.ROOM_LINK_TAKEN, RoomsErrors.ROOM_NOT_FOUND, RoomsErrors.TOO_MANY_INVITATIONS, ...BODY_ERRORS) },
    },
    handler: async (request) => rooms.create(principalOf(request), request.body),
  });

  app.get('/api/rooms', {
    schema: { tags, security, summary: 'The caller\'s rooms, newest first', querystring: pagingQuery(50, 500), response: { 200: page, ...authedErrors() } },
    handler: async (request) => rooms.listMine(principalOf(request), request.query.pageSize, request.query.currentPage),
  });

  app.get('/api/rooms/invitations', {
    schema: {
      tags,
      security,
      summary: 'The caller\'s pending room invitations and message requests, newest first',
      querystring: pagingQuery(50, 500),
      response: { 200: invitationPage, ...authedErrors() },
    },
    handler: async (request) => roomInvitations.listMine(principalOf(request), request.query.pageSize, request.query.currentPage),
  });

  app.post('/api/rooms/:roomId/invitation', {
    schema: {
      tags,
      security,
      summary: 'Accept or decline the caller\'s invitation to a room',
      description: 'Accepting makes the caller a member (the inviter gets `room.invitation-accepted`). Declining may carry a reason, and with `block=true` also blocks the inviter; a declined room cannot invite the caller again. 400 INVITATION_NOT_FOUND when the caller has no pending invitation to this room.',
      params: room,
      querystring: AnswerInvitationQuerySchema,
      response: { 200: RoomInvitationDtoSchema, ...authedErrors(RoomsErrors.INVITATION_NOT_FOUND, ContactsErrors.ACCEPT_WITH_BLOCK) },
    },
    handler: async (request) => roomInvitations.answer(principalOf(request), request.params.roomId, request.query),
  });

  app.get('/api/rooms/:roomId/invitations', {
    schema: {
      tags,
      security,
      summary: 'The room\'s pending invitations (creator or admin)',
      params: room,
      querystring: pagingQuery(50, 500),
      response: { 200: invitationPage, ...authedErrors(RoomsErrors.ROOM_NOT_FOUND, RoomsErrors.ROOM_NOT_ALLOWED) },
    },
    handler: async (request) => roomInvitations.listOfRoom(principalOf(request), request.params.roomId, request.query.pageSize, request.query.currentPage),
  });

  app.delete('/api/rooms/:roomId/invitations/:userId', {
    schema: {
      tags,
      security,
      summary: 'Withdraw a pending invitation (the inviter, the creator or an admin)',
      params: member,
      response: { 204: NoContentSchema, ...authedErrors(RoomsErrors.ROOM_NOT_FOUND, RoomsErrors.INVITATION_NOT_FOUND, RoomsErrors.ROOM_NOT_ALLOWED) },
    },
    handler: async (request, reply) => {
      await roomInvitations.cancel(principalOf(request), request.params.roomId, request.params.userId);
      return reply.code(204).send();
    },
  });

  app.post('/api/rooms/search', {
    schema: {
      tags,
      security,
      summary: 'Public groups, largest first, by name words or the most popular',
      body: RoomSearchSchema,
      response: { 200: page, ...authedErrors(...BODY_ERRORS) },
    },
    handler: async (request) => rooms.search(principalOf(request), request.body),
  });

  app.get('/api/rooms/by-link/:link', {
    schema: {
      tags,
      security,
      summary: 'Resolve a readable link, following the redirects renamed rooms leave',
      params: z.object({ link: z.string().min(1).max(100).regex(/^[A-Za-z0-9-]+$/, 'a room link: letters, digits and hyphens') }),
      response: { 200: RoomDtoSchema, ...authedErrors(RoomsErrors.ROOM_NOT_FOUND) },
    },
    handler: async (request) => rooms.byLink(principalOf(request), request.params.link),
  });

  app.get('/api/rooms/:roomId', {
    schema: {
      tags,
      security,
      summary: 'A room the caller created or administers, or a public group they are an enabled member of',
      params: room,
      response: { 200: RoomDtoSchema, ...authedErrors(RoomsErrors.ROOM_NOT_FOUND) },
    },
    handler: async (request) => rooms.get(principalOf(request), request.params.roomId),
  });

  app.post('/api/rooms/:roomId', {
    schema: {
      tags,
      security,
      summary: 'Update name, description and (public groups) the comment and publish switches',
      description: 'Creator or admin only, not in a direct chat. The switches apply to public groups only, and only when both are given. Renaming a public group moves its link and keeps the old one as a redirect; 400 ROOM_LINK_TAKEN when another room uses the new link.',
      params: room,
      querystring: RoomUpdateQuerySchema,
      response: { 200: RoomDtoSchema, ...authedErrors(RoomsErrors.ROOM_NOT_FOUND, RoomsErrors.ROOM_NOT_ALLOWED, RoomsErrors.ROOM_LINK_TAKEN) },
    },
    handler: async (request) => rooms.update(principalOf(request), request.params.roomId, request.query),
  });

  app.post('/api/rooms/:roomId/:participantId/publish-enabled', {
    schema: {
      tags,
      security,
      summary: 'Let one participant post, or not (creator or admin)',
      params: z.object({ roomId: IdParam, participantId: IdParam }),
      querystring: PublishQuerySchema,
      response: { 204: NoContentSchema, ...authedErrors(RoomsErrors.ROOM_NOT_FOUND, RoomsErrors.ROOM_NOT_ALLOWED, RoomsErrors.NOT_A_MEMBER) },
    },
    handler: async (request, reply) => {
      await rooms.setPublishEnabled(principalOf(request), request.params.roomId, request.params.participantId, request.query.publishEnabled);
      return reply.code(204).send();
    },
  });

  app.get('/api/rooms/:roomId/muted', {
    schema: { tags, security, summary: 'The caller\'s mute setting (enabled members)', params: room, response: { 200: MutedSchema, ...authedErrors(RoomsErrors.ROOM_NOT_FOUND, RoomsErrors.NOT_A_MEMBER) } },
    handler: async (request) => rooms.muted(principalOf(request), request.params.roomId),
  });

  app.get('/api/rooms/:roomId/notifications', {
    schema: {
      tags,
      security,
      summary: 'How loud the room is for the caller: ALL, MENTIONS or NONE, and a mute with an end',
      params: room,
      response: { 200: NotificationsSchema, ...authedErrors(RoomsErrors.ROOM_NOT_FOUND, RoomsErrors.NOT_A_MEMBER) },
    },
    handler: async (request) => rooms.notifications(principalOf(request), request.params.roomId),
  });

  app.put('/api/rooms/:roomId/notifications', {
    schema: {
      tags,
      security,
      summary: 'Set how loud the room is for the caller (the spec\'s mute reads and writes the same: muted is NONE); the caller\'s other devices get room.notifications-changed',
      params: room,
      body: NotificationsRequestSchema,
      response: { 200: NotificationsSchema, ...authedErrors(RoomsErrors.ROOM_NOT_FOUND, RoomsErrors.NOT_A_MEMBER, ...BODY_ERRORS) },
    },
    handler: async (request) => rooms.setNotifications(principalOf(request), request.params.roomId, request.body),
  });

  app.post('/api/rooms/:roomId/muted', {
    schema: { tags, security, summary: 'Set the caller\'s mute setting', params: room, querystring: MutedQuerySchema, response: { 200: MutedSchema, ...authedErrors(RoomsErrors.ROOM_NOT_FOUND, RoomsErrors.NOT_A_MEMBER) } },
    handler: async (request) => rooms.setMuted(principalOf(request), request.params.roomId, request.query.muted),
  });

  app.post('/api/rooms/:roomId/join', {
    schema: {
      tags,
      security,
      summary: 'Join a public group (starting muted), or open a visible broadcast room',
      description: '400 when the room is not a public group (or visible broadcast room), or an admin removed the caller.',
      params: room,
      response: { 200: RoomDtoSchema, ...authedErrors(RoomsErrors.ROOM_NOT_FOUND, RoomsErrors.ROOM_NOT_JOINABLE, RoomsErrors.REMOVED_BY_ADMIN) },
    },
    handler: async (request) => rooms.joinRoom(principalOf(request), request.params.roomId),
  });

  app.put('/api/rooms/:roomId/translations/:language', {
    schema: {
      tags,
      security,
      summary: 'Set or remove a language version of a broadcast room\'s name and description',
      description: 'Creator or admin, or a site administrator; supported languages other than the original. Joining a visible broadcast room shows it in the caller\'s language. An empty name removes the language.',
      params: z.object({ roomId: IdParam, language: LanguageParam }),
      body: RoomTranslationSchema,
      response: { 200: RoomDtoSchema, ...authedErrors(RoomsErrors.ROOM_NOT_FOUND, RoomsErrors.NOT_A_BROADCAST_ROOM, RoomsErrors.ROOM_NOT_ALLOWED, RoomsErrors.LANGUAGE_NOT_SUPPORTED, RoomsErrors.ORIGINAL_LANGUAGE, RoomsErrors.ROOM_NAME_INVALID, ...BODY_ERRORS) },
    },
    handler: async (request) => rooms.translate(principalOf(request), request.params.roomId, request.params.language, request.body),
  });

  app.post('/api/rooms/:roomId/leave', {
    schema: { tags, security, summary: 'Leave the room', params: room, response: { 204: NoContentSchema, ...authedErrors(RoomsErrors.ROOM_NOT_FOUND, RoomsErrors.NOT_A_MEMBER) } },
    handler: async (request, reply) => {
      await rooms.leave(principalOf(request), request.params.roomId);
      return reply.code(204).send();
    },
  });

  app.post('/api/rooms/:roomId/members/:userId', {
    schema: {
      tags,
      security,
      summary: 'Add a member (creator or admin)',
      description: 'A connection of the caller (or a member already) is a member at once: 204. Anyone else is invited (`room.invitation`) and becomes a member when they accept: 202 with the invitation. 400 ROOM_INVITES_REFUSED when the user\'s `roomInvites` setting refuses the caller, BLOCKED when a block stands either way, INVITATION_DECLINED when the user declined this room before; 429 TOO_MANY_INVITATIONS past the invitations to strangers allowed per hour, or when the user has too many waiting.',
      params: member,
      response: {
        202: RoomInvitationDtoSchema,
        204: NoContentSchema,
        ...authedErrors(RoomsErrors.ROOM_NOT_FOUND, RoomsErrors.ROOM_NOT_ALLOWED, UsersErrors.USER_NOT_FOUND, ContactsErrors.BLOCKED, RoomsErrors.ROOM_INVITES_REFUSED, RoomsErrors.INVITATION_DECLINED, RoomsErrors.TOO_MANY_INVITATIONS),
      },
    },
    handler: async (request, reply) => {
      const { roomId, userId } = request.params;
      if ((await rooms.addMember(principalOf(request), roomId, userId)) === 'MEMBER') return reply.code(204).send();
      return reply.code(202).send(await roomInvitations.pending(roomId, userId));
    },
  });

  app.delete('/api/rooms/:roomId/members/:userId', {
    schema: { tags, security, summary: 'Remove a member (creator or admin); they cannot join back by themself', params: member, response: { 204: NoContentSchema, ...authedErrors(RoomsErrors.ROOM_NOT_FOUND, RoomsErrors.ROOM_NOT_ALLOWED, RoomsErrors.CANNOT_REMOVE_CREATOR, RoomsErrors.NOT_A_MEMBER) } },
    handler: async (request, reply) => {
      await rooms.removeMember(principalOf(request), request.params.roomId, request.params.userId);
      return reply.code(204).send();
    },
  });

  app.post('/api/rooms/:roomId/members/:userId/enabled', {
    schema: { tags, security, summary: 'Enable or disable a member (creator or admin)', params: member, querystring: EnabledQuerySchema, response: { 204: NoContentSchema, ...authedErrors(RoomsErrors.ROOM_NOT_FOUND, RoomsErrors.ROOM_NOT_ALLOWED, RoomsErrors.CANNOT_DISABLE_CREATOR, RoomsErrors.NOT_A_MEMBER) } },
    handler: async (request, reply) => {
      await rooms.setMemberEnabled(principalOf(request), request.params.roomId, request.params.userId, request.query.enabled);
      return reply.code(204).send();
    },
  });

  app.post('/api/rooms/:roomId/admins/:userId', {
    schema: { tags, security, summary: 'Make an enabled member an admin (creator or admin)', params: member, response: { 204: NoContentSchema, ...authedErrors(RoomsErrors.ROOM_NOT_FOUND, RoomsErrors.ROOM_NOT_ALLOWED, RoomsErrors.CREATOR_IS_OWNER, RoomsErrors.NOT_A_MEMBER) } },
    handler: async (request, reply) => {
      await rooms.setAdmin(principalOf(request), request.params.roomId, request.params.userId, true);
      return reply.code(204).send();
    },
  });

  app.delete('/api/rooms/:roomId/admins/:userId', {
    schema: { tags, security, summary: 'Unmake an admin (creator or admin)', params: member, response: { 204: NoContentSchema, ...authedErrors(RoomsErrors.ROOM_NOT_FOUND, RoomsErrors.ROOM_NOT_ALLOWED, RoomsErrors.CREATOR_IS_OWNER, RoomsErrors.NOT_A_MEMBER) } },
    handler: async (request, reply) => {
      await rooms.setAdmin(principalOf(request), request.params.roomId, request.params.userId, false);
      return reply.code(204).send();
    },
  });
};
